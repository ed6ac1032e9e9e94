import torch
import torch.nn.functional as F

from data import PointClouds
from model import PointSegNet

net = PointSegNet(k=4)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
loader = torch.utils.data.DataLoader(PointClouds("train"), batch_size=16, shuffle=True)
for epoch in range(10):
    net.train()
    for points, labels in loader:
        opt.zero_grad()
        F.cross_entropy(net(points).reshape(-1, 4), labels.reshape(-1)).backward()
        opt.step()
    torch.save(net.state_dict(), f"seg_{epoch}.pth")
