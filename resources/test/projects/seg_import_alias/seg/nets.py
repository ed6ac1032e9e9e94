import torch.nn.functional as F
from torch import nn

from . import blocks
from .blocks import DoubleConv


class UNetSmall(nn.Module):
    def __init__(self, in_channels=3, num_classes=21, base=32):
        super().__init__()
        self.inc = DoubleConv(in_channels, base)
        self.down1 = blocks.Down(base, 2 * base)
        self.down2 = blocks.Down(2 * base, 4 * base)
        self.up1 = blocks.Up(4 * base, 2 * base)
        self.up2 = blocks.Up(2 * base, base)
        self.head = nn.Conv2d(base, num_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return F.softmax(self.head(x), dim=1)
