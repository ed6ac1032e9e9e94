import torch.nn.functional as F
from torch import nn

from features import *

__all__ = ["KeywordSpotter"]


class KeywordSpotter(nn.Module):
    def __init__(self, n_keywords, channels=64, dropout=0.25):
        super().__init__()
        self.frontend = LogMel()
        self.conv = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(channels, n_keywords)

    def forward(self, wav):
        x = self.frontend(wav).unsqueeze(1)
        x = self.conv(x).mean(dim=(2, 3))
        return F.softmax(self.fc(self.dropout(x)), dim=-1)
