import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from engine import fit_step, run_epoch, run_epoch_managed

x, y = torch.load("features.pt"), torch.load("labels.pt")  # expect: torch-load-without-weights-only
train_loader = DataLoader(TensorDataset(x[:800], y[:800]), batch_size=32, shuffle=True)
val_loader = DataLoader(TensorDataset(x[800:], y[800:]), batch_size=64)

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for epoch in range(30):
    train_loss = run_epoch(model, train_loader, criterion, optimizer)
    val_loss = run_epoch(model, val_loader, criterion)
    print(f"epoch {epoch}: train {train_loss:.4f} val {val_loss:.4f}")

for epoch in range(5):
    run_epoch_managed(model, train_loader, criterion, optimizer)
    print("val", run_epoch_managed(model, val_loader, criterion))

for batch in train_loader:
    fit_step(model, batch, criterion, optimizer)
