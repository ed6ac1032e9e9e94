"""Self-supervised pretraining: resumes from its own checkpoint, which holds only
state_dicts and the epoch number (a weights-only load reads it)."""
import argparse
from pathlib import Path

import torch
import torchvision
from torch import nn

parser = argparse.ArgumentParser(description="pretraining")
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--checkpoint-dir", type=Path, default=Path("./checkpoint/"))


def main():
    args = parser.parse_args()
    args.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    model = torchvision.models.resnet50(weights=None)
    model.fc = nn.Identity()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start_epoch = 0
    if (args.checkpoint_dir / "checkpoint.pth").is_file():
        ckpt = torch.load(args.checkpoint_dir / "checkpoint.pth", map_location="cpu")  # ok: weights-only by default; its own save below holds state_dicts only
        start_epoch = ckpt["epoch"]
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
    for epoch in range(start_epoch, args.epochs):
        model.train()
        for step in range(100):
            x = torch.randn(32, 3, 64, 64)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        state = dict(epoch=epoch + 1, model=model.state_dict(), optimizer=optimizer.state_dict())
        torch.save(state, args.checkpoint_dir / "checkpoint.pth")


if __name__ == "__main__":
    main()
