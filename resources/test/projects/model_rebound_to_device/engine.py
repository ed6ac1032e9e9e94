import torch
import torch.nn as nn


def train_epoch(model, loader, optimizer, device):
    criterion = nn.CrossEntropyLoss()
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)  # expect: cross-entropy-after-softmax
        loss.backward()
        optimizer.step()


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    for x, y in loader:
        out = model(x.to(device))  # expect: eval-without-no-grad
        correct += (out.argmax(1) == y.to(device)).sum().item()
        total += y.numel()
    return correct / total


class HeadTrainer:
    def __init__(self, head, device):
        self.head = head
        self.device = device
        self.head = self.head.to(self.device)
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.head.parameters(), lr=1e-3)

    def fit(self, loader):
        self.head.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.head(x), y)  # ok: LogitHead returns logits
            loss.backward()
            self.optimizer.step()
