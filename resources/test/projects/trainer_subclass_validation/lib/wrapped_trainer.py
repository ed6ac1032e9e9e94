import torch
import torch.nn.functional as F

from .trainer import AlignmentTrainer


class NoGradValidationTrainer(AlignmentTrainer):
    """Validates under no_grad: the subclasses' `_valid_epoch` runs with autograd off."""

    def train(self):
        for epoch in range(self.config.max_epoch):
            self._train_epoch(epoch)
            self.scheduler.step()
            with torch.no_grad():
                val = self._valid_epoch()
            print(epoch, val)


class TripletTrainer(NoGradValidationTrainer):
    def _train_epoch(self, epoch):
        self.model.train()
        for anchor, positive in self.data_loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(anchor), self.model(positive))
            loss.backward()
            self.optimizer.step()

    def _valid_epoch(self):
        self.model.eval()
        total = 0.0
        for anchor, positive in self.val_data_loader:
            total += F.mse_loss(self.model(anchor), self.model(positive)).item()  # ok
        return total / len(self.val_data_loader)
