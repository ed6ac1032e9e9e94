import torch.nn.functional as F
from torch import nn


class LiteSegNet(nn.Module):
    def __init__(self, num_classes, width=48):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, 2 * width, 3, 2, 1, bias=False), nn.BatchNorm2d(2 * width), nn.ReLU(inplace=True),
            nn.Conv2d(2 * width, 4 * width, 3, 2, 1, bias=False), nn.BatchNorm2d(4 * width), nn.ReLU(inplace=True),
        )
        self.dropout = nn.Dropout2d(0.1)
        self.head = nn.Conv2d(4 * width, num_classes, 1)

    def forward(self, x):
        logits = self.head(self.dropout(self.enc(x)))
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)
