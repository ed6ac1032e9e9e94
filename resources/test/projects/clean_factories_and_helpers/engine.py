import torch


def train_step(model, batch, optimizers, criterion, device):
    """One update; returns the loss tensor (still attached to the graph)."""
    inputs, targets = batch
    inputs, targets = inputs.to(device), targets.to(device)
    for opt in optimizers.values():
        opt.zero_grad(set_to_none=True)
    loss = criterion(model(inputs), targets)
    loss.backward()
    for opt in optimizers.values():
        opt.step()
    return loss


def train_step_float(model, batch, optimizer, criterion, device):
    inputs, targets = batch
    optimizer.zero_grad()
    loss = criterion(model(inputs.to(device)), targets.to(device))
    loss.backward()
    optimizer.step()
    return loss.item()


class MultiTrainer:
    def __init__(self, model, optimizers, criterion):
        self.model = model
        self.optimizers = optimizers
        self.criterion = criterion

    def zero_all(self):
        for opt in self.optimizers:
            opt.zero_grad()

    def epoch(self, loader):
        total = 0.0
        for x, y in loader:
            self.zero_all()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            for opt in self.optimizers:
                opt.step()
            total += loss.item()
        return total / len(loader)
