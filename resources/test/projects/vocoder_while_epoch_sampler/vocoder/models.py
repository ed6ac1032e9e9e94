import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, mels=80, channels=64):
        super().__init__()
        self.pre = nn.Conv1d(mels, channels, 7, padding=3)
        self.up = nn.ConvTranspose1d(channels, channels // 2, 16, stride=8, padding=4)
        self.post = nn.Conv1d(channels // 2, 1, 7, padding=3)

    def forward(self, mel):
        x = torch.relu(self.pre(mel))
        x = torch.relu(self.up(x))
        return torch.tanh(self.post(x))
