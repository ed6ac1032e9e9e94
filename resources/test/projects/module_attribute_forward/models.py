import torch
import torch.nn as nn


class LatentSampler:
    """Not a module: draws latent codes; its `forward` is an ordinary method."""

    def __init__(self, z_dim):
        self.z_dim = z_dim

    def forward(self, n):
        return torch.randn(n, self.z_dim)


class Decoder(nn.Module):
    def __init__(self, z_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(z_dim, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid())

    def forward(self, z):
        return self.net(z)


class VAE(nn.Module):
    def __init__(self, z_dim=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(784, 400), nn.ReLU(), nn.Linear(400, 2 * z_dim))
        self.decoder = Decoder(z_dim)
        self.sampler = LatentSampler(z_dim)
        self.z_dim = z_dim

    def forward(self, x):
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decoder(z), mu, logvar
