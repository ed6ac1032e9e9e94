import torch

from losses import detection_loss, vae_loss
from model import VAE, Detector


def train_detector(loader, epochs=5):
    model = Detector()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            opt.zero_grad()
            probs, logits = model(x)
            loss = detection_loss(logits, y.float())
            loss.backward()
            opt.step()
    return model


def train_vae(loader, epochs=5):
    vae = VAE()
    opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
    for _ in range(epochs):
        vae.train()
        for x, _ in loader:
            opt.zero_grad()
            recon_logits, mu, logvar = vae(x)
            loss = vae_loss(recon_logits, x, mu, logvar)
            loss.backward()
            opt.step()
    return vae


if __name__ == "__main__":
    from data import train_loader

    detector = train_detector(train_loader)
    train_vae(train_loader)
