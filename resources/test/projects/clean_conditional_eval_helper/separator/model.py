import torch.nn as nn


class Separator(nn.Module):
    def __init__(self, channels=2, sources=4, hidden=64):
        super().__init__()
        self.sources = sources
        self.net = nn.Sequential(
            nn.Conv1d(channels, hidden, 7, padding=3),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv1d(hidden, channels * sources, 7, padding=3),
        )

    def forward(self, mix):
        b, c, t = mix.shape
        return self.net(mix).view(b, self.sources, c, t)
