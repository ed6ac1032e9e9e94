import torch
from torch import nn


def nograd(f):
    """Run `f` with autograd off (written before `torch.no_grad` was a decorator)."""

    def wrapper(*args, **kwargs):
        with torch.no_grad():
            return f(*args, **kwargs)

    return wrapper


class FlowerNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(4),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Linear(16 * 16, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))

    @nograd
    def predict(self, x):
        return self(x).argmax(1)
