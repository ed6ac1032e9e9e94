"""Road-scene segmentation trainer written for torch 0.4: the learning-rate schedule is
advanced at the top of each iteration, which is the order torch < 1.1 documented."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class TinySegNet(nn.Module):
    def __init__(self, n_classes):
        super(TinySegNet, self).__init__()
        self.enc = nn.Conv2d(3, 16, 3, padding=1)
        self.head = nn.Conv2d(16, n_classes, 1)

    def forward(self, x):
        return self.head(F.relu(self.enc(x)))


def main(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randn(64, 3, 32, 32)
    masks = torch.randint(0, cfg.n_classes, (64, 32, 32))
    loader = DataLoader(TensorDataset(images, masks), batch_size=8, shuffle=True)
    net = TinySegNet(cfg.n_classes).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    it = 0
    while it < cfg.iterations:
        for x, y in loader:
            it += 1
            scheduler.step()
            net.train()
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            if it % 10 == 0:
                print("iter %d loss %.4f" % (it, loss.item()))
            if it >= cfg.iterations:
                break


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n-classes", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--iterations", type=int, default=100)
    main(parser.parse_args())
