import logging

import torch
import torch.nn.functional as F

from checkpoint import load_checkpoint, save_checkpoint

logger = logging.getLogger(__name__)


class Trainer:
    def __init__(self, model, optimizer, scheduler, device, args):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.device = device
        self.args = args
        self.scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")
        self.start_epoch = 0
        self.best = 0.0

    def resume(self, path):
        self.start_epoch, self.best = load_checkpoint(
            path, self.model, self.optimizer, self.scheduler, self.scaler, self.device)
        logger.info("resumed at epoch %d (best %.4f)", self.start_epoch, self.best)

    def _train_epoch(self, loader):
        self.model.train()
        for tokens, labels in loader:
            tokens, labels = tokens.to(self.device), labels.to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(self.device.type, dtype=torch.float16, enabled=self.device.type == "cuda"):
                loss = F.cross_entropy(self.model(tokens), labels)
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()

    def _end_epoch(self):
        self.scheduler.step()  # ok: the scheduler is stepped once per epoch here

    @torch.no_grad()
    def _evaluate(self, loader):
        self.model.eval()
        correct = total = 0
        for tokens, labels in loader:
            preds = self.model(tokens.to(self.device)).argmax(-1).cpu()
            correct += (preds == labels).sum().item()
            total += labels.numel()
        return correct / total

    def fit(self, train_loader, val_loader, epochs, ckpt_path):
        for epoch in range(self.start_epoch, epochs):
            self._train_epoch(train_loader)
            self._end_epoch()
            acc = self._evaluate(val_loader)
            self.best = max(self.best, acc)
            save_checkpoint(ckpt_path, self.model, self.optimizer, self.scheduler, self.scaler,
                            epoch, self.best, self.args)
            logger.info("epoch %d acc %.4f best %.4f lr %.2e", epoch, acc, self.best,
                        self.scheduler.get_last_lr()[0])
