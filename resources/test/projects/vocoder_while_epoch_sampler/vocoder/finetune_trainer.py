import torch.nn.functional as F


class FinetuneTrainer:
    """The same step-budget loop, reseeding the sampler at every pass."""

    def __init__(self, data_loader, model, optimizer, max_steps):
        self.data_loader = data_loader
        self.model = model
        self.optimizer = optimizer
        self.max_steps = max_steps
        self.steps = 0
        self.epochs = 0

    def run(self):
        while self.steps < self.max_steps:
            self.data_loader.sampler.set_epoch(self.epochs)
            for mel, audio in self.data_loader:
                loss = F.l1_loss(self.model(mel.cuda()), audio.cuda())
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.steps += 1
            self.epochs += 1
