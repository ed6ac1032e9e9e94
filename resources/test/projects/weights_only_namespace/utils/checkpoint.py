import torch


def save_checkpoint(path, model, optimizer, epoch, args):
    torch.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "args": args,
        },
        path,
    )


def load_checkpoint(path, device="cpu"):
    return torch.load(path, map_location=device, weights_only=True)  # expect: checkpoint-fails-weights-only-load
