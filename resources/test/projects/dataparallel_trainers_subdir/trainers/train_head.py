# Run from trainers/: checkpoints land in ../checkpoints/.
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.append("..")
from backbones import Head  # noqa: E402


def train(loader, epochs=3):
    net = nn.DataParallel(Head().cuda())
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            loss = F.cross_entropy(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(net.state_dict(), "../checkpoints/head.pth")  # expect: ddp-state-dict-module-prefix
