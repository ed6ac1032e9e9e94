"""Feature extractors for the distribution metrics: pretrained, used for scoring only."""
import torch.nn as nn
import torch.nn.functional as F


class FeatureNet(nn.Module):
    """A small convolutional trunk whose pooled output is compared between image sets."""

    def __init__(self, dims=64, normalize_input=True, requires_grad=False):
        super().__init__()
        self.normalize_input = normalize_input
        self.blocks = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, dims, 3, stride=2),
            nn.BatchNorm2d(dims),
            nn.ReLU(inplace=True),
        )
        for param in self.parameters():
            param.requires_grad = requires_grad

    def forward(self, x):
        if self.normalize_input:
            x = 2 * x - 1
        return F.adaptive_avg_pool2d(self.blocks(x), 1)


class ProbeNet(nn.Module):
    """The same trunk, trainable: fine-tuned by the probe script before scoring."""

    def __init__(self, dims=64):
        super().__init__()
        self.blocks = nn.Sequential(
            nn.Conv2d(3, dims, 3, stride=2),
            nn.BatchNorm2d(dims),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return F.adaptive_avg_pool2d(self.blocks(x), 1)
