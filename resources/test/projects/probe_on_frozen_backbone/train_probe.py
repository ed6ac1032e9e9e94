"""Trains the linear probe. Its BatchNorm layers come from the pretrained backbone, which the
probe's constructor put in eval mode; nothing here calls `train()`, so they use their running
statistics from the first step, and `evaluate()` switching the model to eval mode changes
nothing."""
import torch
import torch.nn as nn

from data import loaders
from engine import evaluate
from models import Probe

train_loader, val_loader = loaders()
probe = Probe()
optimizer = torch.optim.SGD(probe.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(20):
    for images, labels in train_loader:
        optimizer.zero_grad()
        loss = criterion(probe(images), labels)
        loss.backward()
        optimizer.step()
    print(epoch, evaluate(probe, val_loader))
