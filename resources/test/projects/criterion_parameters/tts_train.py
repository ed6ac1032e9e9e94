import torch
from torch.utils.data import DataLoader

from loss_function import Tacotron2Loss


def validate(model, criterion, valset, iteration, batch_size, collate_fn):
    model.eval()
    val_loader = DataLoader(valset, batch_size=batch_size, shuffle=False, collate_fn=collate_fn)
    val_loss = 0.0
    with torch.no_grad():
        for i, batch in enumerate(val_loader):
            x, y = batch
            y_pred = model(x)
            loss = criterion(y_pred, y)
            reduced_val_loss = loss.data[0]  # expect: tensor-data-zero-index
            val_loss += reduced_val_loss
    val_loss = val_loss / (i + 1)
    model.train()
    print(f"validation loss {iteration}: {val_loss:9f}")


def train(model, trainset, valset, collate_fn, epochs, batch_size):
    criterion = Tacotron2Loss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(trainset, batch_size=batch_size, shuffle=True, collate_fn=collate_fn)
    iteration = 0
    model.train()
    for epoch in range(epochs):
        for batch in train_loader:
            x, y = batch
            model.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            iteration += 1
        validate(model, criterion, valset, iteration, batch_size, collate_fn)
