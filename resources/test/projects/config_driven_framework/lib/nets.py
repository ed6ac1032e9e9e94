import torch.nn as nn


class ContrastiveNet(nn.Module):
    """An encoder handed in whole, with a projection head of linear layers only."""

    def __init__(self, encoder, n_features, projection_dim=64):
        super().__init__()
        self.encoder = encoder
        self.encoder.fc = nn.Identity()
        self.projector = nn.Sequential(
            nn.Linear(n_features, n_features),
            nn.ReLU(),
            nn.Linear(n_features, projection_dim),
        )

    def forward(self, x):
        h = self.encoder(x)
        return h, self.projector(h)


class LinearProbe(nn.Module):
    def __init__(self, n_features, n_classes):
        super().__init__()
        self.fc = nn.Linear(n_features, n_classes)

    def forward(self, x):
        return self.fc(x)
