import argparse
from pathlib import Path

import torch
import torchvision


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("pretrained", type=Path)
    parser.add_argument("--exp-dir", type=Path, default=Path("./eval"))
    parser.add_argument("--resume", type=Path, default=None)
    parser.add_argument("--epochs", type=int, default=90)
    return parser.parse_args()


def main():
    args = get_args()
    backbone = torchvision.models.resnet50()
    backbone.fc = torch.nn.Identity()
    # Either a bare state dict (resnet50.pth) or a pre-training checkpoint with one under
    # "model": the load takes both.
    state_dict = torch.load(args.pretrained, map_location="cpu")  # ok
    if "model" in state_dict:
        state_dict = state_dict["model"]
    backbone.load_state_dict(state_dict, strict=False)

    head = torch.nn.Linear(2048, 1000)
    model = torch.nn.Sequential(backbone, head)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    if args.resume is not None:
        ckpt = torch.load(args.resume, map_location="cpu")  # expect: checkpoint-fails-weights-only-load
        start_epoch = ckpt["epoch"]
        best = ckpt["best"]
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
    else:
        start_epoch = 0
        best = argparse.Namespace(top1=0.0, top5=0.0)

    for epoch in range(start_epoch, args.epochs):
        backbone.eval()
        head.train()
        with torch.no_grad():
            feats = backbone(torch.randn(8, 3, 224, 224))
        optimizer.zero_grad()
        loss = head(feats).logsumexp(dim=1).mean()
        loss.backward()
        optimizer.step()
        best.top1 = max(best.top1, float(-loss))
        state = dict(
            epoch=epoch + 1,
            best=best,
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
        )
        torch.save(state, args.exp_dir / "checkpoint.pth")


if __name__ == "__main__":
    main()
