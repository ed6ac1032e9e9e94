import logging

import torch

logger = logging.getLogger(__name__)


class Trainer:
    def __init__(self, model, optimizer, criterion, device, scheduler=None, grad_clip=None):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.device = device
        self.scheduler = scheduler
        self.grad_clip = grad_clip

    def current_lr(self):
        if self.scheduler is not None:
            return self.scheduler.get_last_lr()[0]
        return self.optimizer.param_groups[0]["lr"]

    def train_epoch(self, loader, epoch):
        self.model.train()
        running = 0.0
        for step, (x, y) in enumerate(loader):
            x, y = x.to(self.device), y.to(self.device)
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            if self.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            self.optimizer.step()
            running += loss.item()
        logger.info("epoch %d lr %.5f train loss %.4f", epoch, self.current_lr(), running / len(loader))

    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        correct = total = 0
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
            correct += (self.model(x).argmax(1) == y).sum().item()
            total += y.size(0)
        return correct / total

    def fit(self, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            self.train_epoch(train_loader, epoch)
            acc = self.evaluate(val_loader)
            logger.info("epoch %d val acc %.4f", epoch, acc)
