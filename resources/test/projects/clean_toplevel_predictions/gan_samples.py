import torch
import torch.nn as nn

from models import Generator

real = torch.load("data/mnist_flat.pt")
G = Generator()
D = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()
for step in range(1000):
    batch = real[torch.randint(0, len(real), (64,))]
    fake = G(torch.randn(64, 64))
    opt_d.zero_grad()
    d_loss = bce(D(batch), torch.ones(64, 1)) + bce(D(fake.detach()), torch.zeros(64, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(64, 1))
    g_loss.backward()
    opt_g.step()

samples = G(torch.randn(16, 64)).view(16, 28, 28)
print(samples.shape)
