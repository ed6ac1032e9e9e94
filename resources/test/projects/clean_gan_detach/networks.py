from torch import nn


class MLPGenerator(nn.Module):
    def __init__(self, z_dim=64, img_dim=28 * 28, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(z_dim, hidden), nn.LeakyReLU(0.2),
            nn.Linear(hidden, 2 * hidden), nn.BatchNorm1d(2 * hidden), nn.LeakyReLU(0.2),
            nn.Linear(2 * hidden, img_dim), nn.Tanh(),
        )

    def forward(self, z):
        return self.net(z)


class MLPDiscriminator(nn.Module):
    def __init__(self, img_dim=28 * 28, hidden=256):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(img_dim, 2 * hidden), nn.LeakyReLU(0.2), nn.Dropout(0.3),
            nn.Linear(2 * hidden, hidden), nn.LeakyReLU(0.2), nn.Dropout(0.3),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x.flatten(1)).squeeze(1)  # logits
