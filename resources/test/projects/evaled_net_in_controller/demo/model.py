import torch.nn as nn


class SegNet(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Dropout2d(0.1),
        )
        self.head = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        return self.head(self.body(x))
