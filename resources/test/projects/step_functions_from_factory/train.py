import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader

from regression.loops import mini_batch
from regression.steps import make_error_step_fn, make_train_step_fn, make_val_step_fn


def main(train_data, val_data, n_epochs=200):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(1, 8), nn.Dropout(0.1), nn.Linear(8, 1)).to(device)
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss(reduction="mean")
    train_loader = DataLoader(train_data, batch_size=16, shuffle=True)
    val_loader = DataLoader(val_data, batch_size=16)

    train_step_fn = make_train_step_fn(model, loss_fn, optimizer)
    val_step_fn = make_val_step_fn(model, loss_fn)
    error_step_fn = make_error_step_fn(model)

    losses, val_losses = [], []
    for epoch in range(n_epochs):
        losses.append(mini_batch(device, train_loader, train_step_fn))
        with torch.no_grad():
            val_losses.append(mini_batch(device, val_loader, val_step_fn))
    print("mean absolute error", mini_batch(device, val_loader, error_step_fn))
    torch.save(model.state_dict(), "model.pth")
    return losses, val_losses
