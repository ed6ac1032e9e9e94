import torch
import torch.nn as nn
import torch.nn.functional as F

from utils import AverageMeter, ScalarMeter


def train_epoch(model, loader, optimizer):
    losses = AverageMeter()
    scalars = ScalarMeter()
    accuracy = AverageMeter()
    model.train()
    for x, y in loader:
        out = model(x)
        loss = F.cross_entropy(out, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))  # expect: accumulate-loss-tensor
        scalars.update(loss, x.size(0))
        accuracy.update((out.argmax(1) == y).float().mean().item(), x.size(0))
    return losses.avg, scalars.total / scalars.count


def main(loader, epochs=10):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        train_epoch(model, loader, optimizer)
