import argparse

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        torch.save({"model": model, "optimizer": optimizer, "args": args, "epoch": epoch}, "resume.pt")
    checkpoint = torch.load("resume.pt")
    model = checkpoint["model"]
    optimizer = checkpoint["optimizer"]
    return model, optimizer


if __name__ == "__main__":
    main()
