import argparse

import numpy as np
import torch
import torch.nn as nn

from vit import HybridViT


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrained", default="imagenet21k_R50.npz")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()

    model = HybridViT(num_classes=10)
    model.load_from(np.load(args.pretrained))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for step in range(args.steps):
        x = torch.randn(8, 3, 64, 64)
        y = torch.randint(0, 10, (8,))
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(step, loss.item())


if __name__ == "__main__":
    main()
