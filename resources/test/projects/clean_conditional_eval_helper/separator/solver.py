import logging

import torch
import torch.nn.functional as F

from .apply import apply_model

log = logging.getLogger(__name__)


class Solver:
    def __init__(self, loaders, model, optimizer, valid_apply=True):
        self.loaders = loaders
        self.model = model
        self.optimizer = optimizer
        self.valid_apply = valid_apply

    def run_one_epoch(self, epoch, train=True):
        loader = self.loaders["train"] if train else self.loaders["valid"]
        total = 0.0
        for idx, sources in enumerate(loader):
            mix = sources.sum(dim=1)
            if not train and self.valid_apply:
                estimate = apply_model(self.model, mix)  # ok: only in validation
            else:
                estimate = self.model(mix)
            loss = F.l1_loss(estimate, sources)
            if train:
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            total += loss.item()
        return total / max(1, len(loader))

    def train(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            train_loss = self.run_one_epoch(epoch)
            self.model.eval()
            with torch.no_grad():
                valid_loss = self.run_one_epoch(epoch, train=False)
            log.info("epoch %d train %.4f valid %.4f", epoch, train_loss, valid_loss)
            torch.save(self.model.state_dict(), "separator.th")
