import torch.nn as nn


class SimpleNetBN(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, 32, 3, padding=1)
        self.bn = nn.BatchNorm1d(32)
        self.head = nn.Conv1d(32, out_channels, 1)

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).relu())


class ResUNetBN2C(SimpleNetBN):
    def forward(self, x):
        h = self.bn(self.conv(x)).relu()
        return self.head(h + self.conv(x))
