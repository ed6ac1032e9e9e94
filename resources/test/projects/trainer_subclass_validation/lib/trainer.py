import logging

import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim

from models import load_model


class AlignmentTrainer:
    """Builds the model and the optimizer; subclasses define one epoch of each phase."""

    def __init__(self, config, data_loader, val_data_loader=None):
        Model = load_model(config.model)
        model = Model(config.in_channels, config.out_channels)
        self.config = config
        self.model = model
        self.optimizer = getattr(optim, config.optimizer)(model.parameters(), lr=config.lr)
        self.scheduler = optim.lr_scheduler.ExponentialLR(self.optimizer, config.exp_gamma)
        self.data_loader = data_loader
        self.val_data_loader = val_data_loader
        self.best_val = -np.inf

    def train(self):
        for epoch in range(self.config.max_epoch):
            self._train_epoch(epoch)
            self.scheduler.step()
            if self.val_data_loader is not None:
                val = self._valid_epoch()
                logging.info("epoch %d: val %.4f", epoch, val)
                if val > self.best_val:
                    self.best_val = val
                    torch.save({"state_dict": self.model.state_dict()}, "best_val_checkpoint.pth")


class ContrastiveLossTrainer(AlignmentTrainer):
    def _train_epoch(self, epoch):
        self.model.train()
        for x0, x1 in self.data_loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(x0), self.model(x1))
            loss.backward()
            self.optimizer.step()

    def _valid_epoch(self):
        # Change the network to evaluation mode
        self.model.eval()
        data_loader_iter = iter(self.val_data_loader)
        hits = []
        for _ in range(len(self.val_data_loader)):
            x0, x1 = next(data_loader_iter)
            f0 = self.model(x0)  # expect: eval-without-no-grad
            f1 = self.model(x1)
            hits.append((f0.argmax(1) == f1.argmax(1)).float().mean().item())
        return float(np.mean(hits))
