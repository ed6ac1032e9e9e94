import argparse
from pathlib import Path

import torch
import torchvision


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--exp-dir", type=Path, default=Path("./exp"))
    parser.add_argument("--epochs", type=int, default=100)
    return parser.parse_args()


def main():
    args = get_args()
    args.exp_dir.mkdir(parents=True, exist_ok=True)
    backbone = torchvision.models.resnet50()
    backbone.fc = torch.nn.Identity()
    optimizer = torch.optim.SGD(backbone.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        backbone.train()
        optimizer.zero_grad()
        loss = backbone(torch.randn(8, 3, 224, 224)).pow(2).mean()
        loss.backward()
        optimizer.step()
        state = dict(
            epoch=epoch + 1,
            model=backbone.state_dict(),
            optimizer=optimizer.state_dict(),
        )
        torch.save(state, args.exp_dir / "pretrain.pth")
    torch.save(backbone.state_dict(), args.exp_dir / "resnet50.pth")


if __name__ == "__main__":
    main()
