import torch.nn as nn


class SegNet(nn.Module):
    """A small encoder-decoder with BatchNorm and Dropout."""

    def __init__(self, n_classes=4):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Dropout2d(0.1)
        )
        self.dec = nn.Conv2d(16, n_classes, 1)

    def forward(self, x):
        return self.dec(self.enc(x))


class LinearProbe(nn.Module):
    """A linear classifier on frozen features: no layer that depends on the mode."""

    def __init__(self, dim=128, n_classes=10):
        super().__init__()
        self.fc = nn.Linear(dim, n_classes)

    def forward(self, feats):
        return self.fc(feats)
