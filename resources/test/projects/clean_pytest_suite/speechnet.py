import torch
import torch.nn.functional as F
from torch import nn


class M5(nn.Module):
    """1-D conv net over raw 8 kHz audio; returns log-probabilities."""

    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.conv2 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(2 * n_channel)
        self.pool = nn.MaxPool1d(4)
        self.fc = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = torch.mean(x, dim=-1)
        return F.log_softmax(self.fc(x), dim=-1)
