import logging
import os

import torch

logger = logging.getLogger(__name__)


class BaseTrainer:
    """Shared plumbing: device, checkpoints, evaluation."""

    def __init__(self, model, optimizer, scheduler, device, output_dir):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.device = device
        self.output_dir = output_dir
        self.start_epoch = 0
        os.makedirs(output_dir, exist_ok=True)

    def train_step(self, batch):
        raise NotImplementedError

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        correct = total = 0
        for images, labels in loader:
            images, labels = images.to(self.device), labels.to(self.device)
            correct += (self.model(images).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
        return correct / max(total, 1)

    def save_checkpoint(self, epoch, name="last.pth"):
        state = {
            "epoch": epoch,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
        }
        torch.save(state, os.path.join(self.output_dir, name))

    def resume(self, path):
        ckpt = torch.load(path, map_location=self.device, weights_only=True)
        self.model.load_state_dict(ckpt["model"])  # expect: resume-without-optimizer-state
        self.start_epoch = ckpt["epoch"] + 1
        logger.info("resumed from %s at epoch %d", path, self.start_epoch)
