"""Loops shared by train.py and finetune.py; every framework object comes in as an argument."""
import logging
import math

logger = logging.getLogger(__name__)


class AverageMeter:
    def __init__(self):
        self.sum = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def train_one_epoch(model, loader, optimizer, loss_fn, device, max_norm=None, clip_fn=None):
    model.train()
    meter = AverageMeter()
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        if max_norm is not None and clip_fn is not None:
            clip_fn(model.parameters(), max_norm)
        optimizer.step()
        meter.update(loss.item(), inputs.size(0))  # ok: a Python float
    return meter.avg


def evaluate(model, loader, loss_fn, device):
    """Caller disables autograd (see train.py)."""
    model.eval()
    meter = AverageMeter()
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        outputs = model(inputs)  # ok: the caller wraps this call in no_grad
        meter.update(loss_fn(outputs, targets).item(), inputs.size(0))
    return meter.avg, math.sqrt(meter.avg)
