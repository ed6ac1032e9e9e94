import argparse
import os

import torch
import torch.nn as nn
import torchvision.utils as vutils
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import Discriminator, Generator, weights_init


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--dataroot", required=True)
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--nz", type=int, default=100)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--outf", default="out")
    return p.parse_args()


def main():
    args = get_args()
    os.makedirs(args.outf, exist_ok=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tfm = transforms.Compose([transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor(),
                              transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    loader = DataLoader(datasets.ImageFolder(args.dataroot, tfm), batch_size=args.batch_size,
                        shuffle=True, num_workers=4, drop_last=True)

    nets = {"G": Generator(args.nz), "D": Discriminator()}
    for net in nets.values():
        net.apply(weights_init)
        net.to(device)
    opts = {name: torch.optim.Adam(net.parameters(), lr=args.lr, betas=(0.5, 0.999)) for name, net in nets.items()}
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(args.epochs):
        for i, (real, _) in enumerate(loader):
            real = real.to(device)
            b = real.size(0)
            ones = torch.ones(b, device=device)
            zeros = torch.zeros(b, device=device)
            z = torch.randn(b, args.nz, 1, 1, device=device)
            fake = nets["G"](z)

            # (1) discriminator: real -> 1, fake -> 0
            opts["D"].zero_grad()
            loss_real = criterion(nets["D"](real), ones)
            loss_fake = criterion(nets["D"](fake), zeros)  # expect: gan-discriminator-on-undetached-fake
            loss_d = loss_real + loss_fake
            loss_d.backward(retain_graph=True)  # ok: G backward below reuses the graph of `fake`
            opts["D"].step()

            # (2) generator: make D say 1 on fakes
            opts["G"].zero_grad()
            loss_g = criterion(nets["D"](fake), ones)
            loss_g.backward()
            opts["G"].step()

            if i % 100 == 0:
                print(f"[{epoch}/{args.epochs}][{i}/{len(loader)}] D {loss_d.item():.3f} G {loss_g.item():.3f}")
                vutils.save_image(fake.detach()[:64], f"{args.outf}/fake_e{epoch:03d}_i{i:05d}.png", normalize=True)

        torch.save({name: net.state_dict() for name, net in nets.items()}, f"{args.outf}/nets_e{epoch:03d}.pt")


if __name__ == "__main__":
    main()
