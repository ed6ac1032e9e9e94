import torch
import torch.nn.functional as F


def detection_loss(logits, target):
    return F.binary_cross_entropy_with_logits(logits, target)


def vae_loss(recon_logits, x, mu, logvar):
    recon = F.binary_cross_entropy_with_logits(recon_logits, x.view(-1, 784), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return recon + kld

