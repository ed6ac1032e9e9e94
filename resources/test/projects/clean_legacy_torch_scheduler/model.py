import torch.nn as nn
import torch.nn.functional as F


class TinySegNet(nn.Module):
    def __init__(self, n_classes):
        super(TinySegNet, self).__init__()
        self.enc = nn.Conv2d(3, 16, 3, padding=1)
        self.head = nn.Conv2d(16, n_classes, 1)

    def forward(self, x):
        return self.head(F.relu(self.enc(x)))
