import torch.nn as nn


class TinyUNet(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU())
        self.up = nn.Conv2d(channels, 1, 1)

    def forward(self, x):
        return self.up(self.down(x))


class MetricTracker:
    def __init__(self, preds, masks):
        self.preds = preds
        self.masks = masks
