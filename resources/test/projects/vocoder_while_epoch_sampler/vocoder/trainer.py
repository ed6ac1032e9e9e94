import torch.nn.functional as F


class Trainer:
    """Runs steps until the step budget is spent: no epoch count, a `while True:` loop."""

    def __init__(self, steps, data_loader, model, optimizer, config):
        self.steps = steps
        self.epochs = 0
        self.data_loader = data_loader
        self.model = model
        self.optimizer = optimizer
        self.config = config
        self.finish_train = False

    def run(self):
        while True:
            self._train_epoch()
            if self.finish_train:
                break

    def _train_epoch(self):
        for mel, audio in self.data_loader:
            self._train_step(mel.cuda(), audio.cuda())
            if self.steps >= self.config["train_max_steps"]:
                self.finish_train = True
                return
        self.epochs += 1

    def _train_step(self, mel, audio):
        loss = F.l1_loss(self.model(mel), audio)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.steps += 1
