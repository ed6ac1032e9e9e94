"""Fine-tunes the whole probe. `model.train()` before the loop puts the backbone's BatchNorm in
training mode for the first epoch; `evaluate()` then leaves it in eval mode for every later one."""
import torch
import torch.nn as nn

from data import loaders
from engine import evaluate
from models import Probe

train_loader, val_loader = loaders()
model = Probe()
for p in model.parameters():
    p.requires_grad = True
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
criterion = nn.CrossEntropyLoss()

model.train()
for epoch in range(20):
    for images, labels in train_loader:
        optimizer.zero_grad()
        criterion(model(images), labels).backward()
        optimizer.step()
    acc = evaluate(model, val_loader)  # expect: missing-train-after-eval
    print(epoch, acc)
