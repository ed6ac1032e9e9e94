import logging

import torch

logger = logging.getLogger(__name__)


class ForecastTrainer:
    def __init__(self, model, optimizer, scheduler, device, use_amp=True):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.device = device
        self.use_amp = use_amp and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.criterion = torch.nn.HuberLoss(delta=1.0)

    def compute_loss(self, batch):
        x, y = (t.to(self.device, non_blocking=True) for t in batch)
        return self.criterion(self.model(x), y)

    def backward(self, loss):
        self.scaler.scale(loss).backward()

    def optimizer_step(self):
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()

    def train_step(self, batch):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            loss = self.compute_loss(batch)
        self.optimizer_step()  # expect: optimizer-step-before-backward
        self.backward(loss)
        return loss.detach()

    @torch.no_grad()
    def validate(self, loader):
        self.model.eval()
        losses = [self.compute_loss(batch).item() for batch in loader]
        self.model.train()
        return sum(losses) / len(losses)

    def fit(self, train_loader, val_loader, epochs):
        self.model.train()
        for epoch in range(epochs):
            running = 0.0
            for batch in train_loader:
                running += self.train_step(batch).item()
            val = self.validate(val_loader)
            logger.info("epoch %d train %.4f val %.4f", epoch, running / len(train_loader), val)
