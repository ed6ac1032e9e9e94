"""A conditional VAE on MNIST-like data, run on the GPU through the default tensor type."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class ConditionalVAE(nn.Module):
    def __init__(self, latent, classes):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(784 + classes, 400), nn.ReLU())
        self.mu = nn.Linear(400, latent)
        self.logvar = nn.Linear(400, latent)
        self.decoder = nn.Sequential(
            nn.Linear(latent + classes, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid()
        )

    def forward(self, x, c):
        h = self.encoder(torch.cat([x, c], dim=1))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decoder(torch.cat([z, c], dim=1)), mu, logvar


def vae_loss(recon, x, mu, logvar):
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


def main(train_set, test_set):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    if torch.cuda.is_available():
        device = torch.device("cuda")
        torch.set_default_tensor_type(torch.cuda.FloatTensor)  # expect: set-default-tensor-type-deprecated
    else:
        device = torch.device("cpu")
    model = ConditionalVAE(16, 10).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=128)
    for epoch in range(args.epochs):
        model.train()
        for x, c in train_loader:
            x, c = x.to(device).view(-1, 784), c.to(device)
            recon, mu, logvar = model(x, c)
            loss = vae_loss(recon, x, mu, logvar)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        total = 0.0
        with torch.no_grad():
            for x, c in test_loader:
                x_test = x.view(-1, 784).to("cpu")
                recon, mu, logvar = model(x_test, c.to(device))  # expect: input-not-moved-to-model-device
                total += vae_loss(recon, x_test, mu, logvar).item()
        print(f"epoch {epoch}: test loss {total / len(test_set):.4f}")
