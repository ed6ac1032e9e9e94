# Run from the repository root.
import torch
import torch.nn as nn

from backbones import backbone


def load_members(names):
    members = []
    for name in names:
        net = nn.DataParallel(backbone(pretrained=False).cuda())
        net.load_state_dict(torch.load("checkpoints/backbone_{}.pth".format(name)))
        net.eval()
        members.append(net)
    return members


def predict(names, x):
    with torch.no_grad():
        return torch.stack([m(x) for m in load_members(names)]).mean(0)
