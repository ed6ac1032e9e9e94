import logging

import torch

log = logging.getLogger(__name__)


class Trainer:
    def __init__(self, model, optimizers, criterion, device):
        self.model = model
        self.optimizers = optimizers
        self.criterion = criterion
        self.device = device

    def compute_loss(self, batch):
        images, labels = batch
        images, labels = images.to(self.device), labels.to(self.device)
        return self.criterion(self.model(images), labels)

    def train_epoch(self, loader):
        self.model.train()
        total = 0.0
        for batch in loader:
            loss = self.compute_loss(batch)
            loss.backward()
            for opt in self.optimizers:
                opt.step()  # expect: missing-zero-grad
            total += loss.item()
        return total / len(loader)

    @torch.no_grad()
    def validate(self, loader):
        self.model.eval()
        correct = seen = 0
        for images, labels in loader:
            preds = self.model(images.to(self.device)).argmax(dim=1).cpu()
            correct += (preds == labels).sum().item()
            seen += labels.numel()
        return correct / seen

    def fit(self, train_loader, val_loader, epochs):
        best = 0.0
        for epoch in range(epochs):
            loss = self.train_epoch(train_loader)
            acc = self.validate(val_loader)
            log.info("epoch %d: loss %.4f, val acc %.4f", epoch, loss, acc)
            if acc > best:
                best = acc
                torch.save(self.model.state_dict(), "finetune_best.pt")
        return best
