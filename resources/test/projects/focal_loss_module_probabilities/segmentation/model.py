import torch
import torch.nn as nn


class SpoofNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(16, 1, 1)

    def forward(self, x):
        score_map = self.head(self.features(x))
        return torch.sigmoid(score_map), score_map
