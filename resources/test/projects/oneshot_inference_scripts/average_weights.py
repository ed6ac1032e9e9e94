import sys

import torch

from data import PointClouds
from model import PointSegNet

# Average two snapshots into a fresh copy, then refresh the BatchNorm statistics on training
# data: running the model in training mode here is the point.
a, b = PointSegNet(), PointSegNet()
a.load_state_dict(torch.load(sys.argv[1], weights_only=True))
b.load_state_dict(torch.load(sys.argv[2], weights_only=True))
avg = PointSegNet()
avg.load_state_dict({k: (a.state_dict()[k] + b.state_dict()[k]) / 2 for k in a.state_dict()})
avg.train()
for i in range(32):
    points, _ = PointClouds("train")[i]
    avg(points.unsqueeze(0))  # ok: train() on purpose, refreshing BatchNorm statistics
torch.save(avg.state_dict(), "averaged.pth")
