import torch

from losses import vae_loss


class Trainer:
    def __init__(self, model, optimizer, device):
        self.model = model
        self.optimizer = optimizer
        self.device = device

    def train_epoch(self, loader, beta=1.0):
        self.model.train()
        total = 0.0
        for data, _ in loader:
            data = data.to(self.device)
            self.optimizer.zero_grad()
            recon, mu, logvar = self.model(data)
            loss = vae_loss(recon, data, mu, logvar, beta)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total / len(loader.dataset)

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        total = 0.0
        for data, _ in loader:
            recon, mu, logvar = self.model(data.to(self.device))
            total += vae_loss(recon, data.to(self.device), mu, logvar).item()
        return total / len(loader.dataset)
