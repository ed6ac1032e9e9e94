import logging
import time

import torch as th
import torch.nn as nn
from torch.optim import AdamW
from torch.optim.lr_scheduler import CosineAnnealingLR

log = logging.getLogger(__name__)


class Trainer:
    def __init__(self, model: nn.Module, train_loader, val_loader, epochs: int = 20):
        self.device = th.device("cuda" if th.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.optimizer = AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.01)
        self.scheduler = CosineAnnealingLR(self.optimizer, T_max=epochs)
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.epochs = epochs

    def train_one_epoch(self):
        self.model.train()
        total = 0.0
        for batch in self.train_loader:
            inputs = batch["input"].to(self.device)
            targets = batch["target"].to(self.device)
            self.optimizer.zero_grad()
            outputs = self.model(inputs)
            loss = self.criterion(outputs, targets)
            loss.backward()
            self.optimizer.step()
            total += loss.item() * inputs.size(0)
        return total / len(self.train_loader.dataset)

    @th.no_grad()
    def validate(self):
        self.model.eval()
        correct, seen = 0, 0
        for batch in self.val_loader:
            inputs = batch["input"].to(self.device)
            targets = batch["target"].to(self.device)
            preds = self.model(inputs).argmax(dim=-1)
            correct += (preds == targets).sum().item()
            seen += targets.numel()
        return correct / max(seen, 1)

    def fit(self):
        history = []
        for epoch in range(self.epochs):
            start = time.perf_counter()
            train_loss = self.train_one_epoch()
            acc = self.validate()
            self.scheduler.step()
            history.append({"epoch": epoch, "loss": train_loss, "acc": acc})
            log.info("epoch %d loss %.4f acc %.3f (%.1fs)", epoch, train_loss, acc,
                     time.perf_counter() - start)
        return history
