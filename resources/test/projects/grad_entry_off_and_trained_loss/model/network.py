import torch.nn as nn


class SegNet(nn.Module):
    def __init__(self, num_classes=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(5, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Conv2d(32, num_classes, 1),
        )

    def forward(self, x):
        return self.body(x)
