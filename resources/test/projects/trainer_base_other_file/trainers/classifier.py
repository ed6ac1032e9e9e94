import logging

from .base import BaseTrainer

logger = logging.getLogger(__name__)


class ClassifierTrainer(BaseTrainer):
    def __init__(self, model, optimizer, scheduler, criterion, device, output_dir):
        super().__init__(model, optimizer, scheduler, device, output_dir)
        self.criterion = criterion

    def train_step(self, batch):
        images, labels = (t.to(self.device, non_blocking=True) for t in batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.criterion(self.model(images), labels)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, train_loader, val_loader, epochs):
        self.model.train()
        for epoch in range(self.start_epoch, epochs):
            running = 0.0
            for batch in train_loader:
                running += self.train_step(batch)
            self.scheduler.step()
            acc = self.evaluate(val_loader)  # expect: missing-train-after-eval
            logger.info("epoch %d loss %.4f val acc %.4f", epoch, running / len(train_loader), acc)
            self.save_checkpoint(epoch)
