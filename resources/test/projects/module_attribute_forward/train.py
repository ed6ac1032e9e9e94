import torch
import torch.nn.functional as F
from torchvision import datasets, transforms

from models import VAE
from sample import interpolate

loader = torch.utils.data.DataLoader(
    datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor()),
    batch_size=128,
    shuffle=True,
)
model = VAE()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(10):
    model.train()
    for x, _ in loader:
        x = x.view(-1, 784)
        recon, mu, logvar = model(x)
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = F.mse_loss(recon, x, reduction="sum") + kld
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    frames = interpolate(model)
torch.save(model.state_dict(), "vae.pt")
