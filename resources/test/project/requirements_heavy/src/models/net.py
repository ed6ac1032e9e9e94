import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class DeepEncoder(Encoder):
    pass


class NotAModule:
    pass
