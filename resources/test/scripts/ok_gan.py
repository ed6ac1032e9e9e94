import torch
import torch.nn as nn

latent_dim = 64
G = nn.Sequential(nn.Linear(latent_dim, 256), nn.ReLU(), nn.Linear(256, 784), nn.Tanh())
D = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()


def train(loader, epochs=5):
    for epoch in range(epochs):
        for real, _ in loader:
            real = real.view(real.size(0), -1)
            batch = real.size(0)
            z = torch.randn(batch, latent_dim)
            fake = G(z)

            opt_d.zero_grad()
            d_real = D(real)
            d_fake = D(fake.detach())
            loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            loss_d.backward()
            opt_d.step()

            opt_g.zero_grad()
            d_out = D(fake)
            loss_g = bce(d_out, torch.ones_like(d_out))
            loss_g.backward()
            opt_g.step()
        print(f"epoch {epoch} d={loss_d.item():.3f} g={loss_g.item():.3f}")
