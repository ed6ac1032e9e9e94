"""Linear evaluation: its own checkpoint directory (a different parser and default) holds the
best accuracy together with the argparse Namespace; it never reads pretrain.py's file."""
import argparse
from pathlib import Path

import torch
import torchvision
from torch import nn

parser = argparse.ArgumentParser(description="linear evaluation")
parser.add_argument("--epochs", type=int, default=90)
parser.add_argument("--checkpoint-dir", type=Path, default=Path("./checkpoint/probe/"))


def main():
    args = parser.parse_args()
    args.checkpoint_dir.mkdir(parents=True, exist_ok=True)
    model = torchvision.models.resnet50(weights=None)
    model.requires_grad_(False)
    model.fc = nn.Linear(2048, 1000)
    model.fc.requires_grad_(True)
    optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.3)
    criterion = nn.CrossEntropyLoss()
    best_acc = argparse.Namespace(top1=0.0, top5=0.0)
    for epoch in range(args.epochs):
        model.eval()
        for step in range(100):
            x, y = torch.randn(32, 3, 64, 64), torch.randint(0, 1000, (32,))
            loss = criterion(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        state = dict(epoch=epoch + 1, best_acc=best_acc, model=model.state_dict(), optimizer=optimizer.state_dict())
        torch.save(state, args.checkpoint_dir / "checkpoint.pth")


if __name__ == "__main__":
    main()
