import torch.nn as nn


class PointSegNet(nn.Module):
    def __init__(self, k=4):
        super().__init__()
        self.feat = nn.Sequential(
            nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
        )
        self.head = nn.Conv1d(128, k, 1)

    def forward(self, x):
        return self.head(self.feat(x)).transpose(2, 1)
