"""Road-scene segmentation trainer written for torch 0.4: the learning-rate schedule is
advanced at the top of each epoch, which is the order torch < 1.1 documented."""
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from model import TinySegNet


def main(cfg):
    torch.manual_seed(cfg.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randn(64, 3, 32, 32)
    masks = torch.randint(0, cfg.n_classes, (64, 32, 32))
    loader = DataLoader(TensorDataset(images, masks), batch_size=8, shuffle=True, pin_memory=True)
    net = TinySegNet(cfg.n_classes).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.1)
    for epoch in range(cfg.epochs):
        scheduler.step()
        net.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
        print("epoch %d loss %.4f" % (epoch, loss.item()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-classes", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    main(parser.parse_args())
