import torch
from torch import nn


class Detector(nn.Module):
    """Returns the probabilities for display and the logits for the loss."""

    def __init__(self, in_features: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Linear(32, 1))

    def scores(self, x):
        return self.body(x).squeeze(-1)

    def forward(self, x):
        logits = self.scores(x)
        return torch.sigmoid(logits), logits


class VAE(nn.Module):
    """A decoder that ends in a linear layer: the loss takes logits."""

    def __init__(self, latent_dim: int = 20):
        super().__init__()
        self.encoder = nn.Linear(784, 2 * latent_dim)
        self.decoder = nn.Sequential(nn.Linear(latent_dim, 400), nn.ReLU(), nn.Linear(400, 784))

    def decode(self, z):
        return self.decoder(z)

    def forward(self, x):
        mu, logvar = self.encoder(x.view(-1, 784)).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar
