# Run from trainers/: checkpoints land in ../checkpoints/.
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.append("..")
from backbones import backbone  # noqa: E402


def restore(net, name):
    # ok: never called (the call below is commented out)
    net.load_state_dict(torch.load("../checkpoints/backbone_{}.pth".format(name)))


def train(loader, name, epochs=3):
    net = nn.DataParallel(backbone().cuda())
    # restore(net, name)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            loss = F.cross_entropy(net(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        # ok: every load of these files (ensemble.py, run from the root) wraps the model first
        torch.save(net.state_dict(), "../checkpoints/backbone_{}.pth".format(name))


if __name__ == "__main__":
    from data import make_loader

    train(make_loader(), "v1")
