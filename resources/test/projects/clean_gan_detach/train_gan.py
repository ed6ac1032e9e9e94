import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.utils import save_image

from networks import MLPDiscriminator, MLPGenerator


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--z-dim", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--out", default="samples")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
    loader = DataLoader(datasets.MNIST("data", train=True, download=True, transform=tf),
                        batch_size=128, shuffle=True, drop_last=True, num_workers=2)

    models = {"gen": MLPGenerator(args.z_dim).to(device), "disc": MLPDiscriminator().to(device)}
    optims = {k: torch.optim.Adam(m.parameters(), lr=args.lr, betas=(0.5, 0.999)) for k, m in models.items()}
    bce = nn.BCEWithLogitsLoss()
    fixed_z = torch.randn(64, args.z_dim, device=device)

    for epoch in range(args.epochs):
        for real, _ in loader:
            real = real.to(device).flatten(1)
            n = real.size(0)
            z = torch.randn(n, args.z_dim, device=device)
            fake = models["gen"](z)

            optims["disc"].zero_grad()
            d_real = models["disc"](real)
            d_fake = models["disc"](fake.detach())  # ok: detached, no backward through the generator
            loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            loss_d.backward()
            optims["disc"].step()

            optims["gen"].zero_grad()
            d_out = models["disc"](fake)  # ok: the generator step needs the graph through G
            loss_g = bce(d_out, torch.ones_like(d_out))
            loss_g.backward()
            optims["gen"].step()

        models["gen"].eval()
        with torch.no_grad():
            samples = models["gen"](fixed_z).view(-1, 1, 28, 28)
        models["gen"].train()
        save_image(samples * 0.5 + 0.5, os.path.join(args.out, f"epoch_{epoch:03d}.png"), nrow=8)
        print(f"epoch {epoch}: loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")

    torch.save({k: m.state_dict() for k, m in models.items()}, "gan_mnist.pt")


if __name__ == "__main__":
    main()
