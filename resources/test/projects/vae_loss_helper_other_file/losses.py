import torch
import torch.nn.functional as F


def vae_loss(recon_x: torch.Tensor, x: torch.Tensor, mu, logvar, beta: float = 1.0):
    recon = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")  # expect: bce-after-sigmoid
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return recon + beta * kld
