import torch


def _to(batch, device):
    return [t.to(device) for t in batch]


@torch.no_grad()
def evaluate(model, loader, loss_fn, device="cpu"):
    model.eval()
    total, n = 0.0, 0
    for inputs, targets in (_to(b, device) for b in loader):
        total += loss_fn(model(inputs), targets).item() * len(targets)
        n += len(targets)
    return total / max(n, 1)


def fit(model, optimizer, loss_fn, train_loader, val_loader=None, epochs=10, device="cpu", callbacks=()):
    """Train `model` for `epochs` epochs; returns the per-epoch logs."""
    model.to(device)
    model.train()
    logs_per_epoch = []
    for epoch in range(epochs):
        running, n = 0.0, 0
        for inputs, targets in train_loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            running += loss.item() * len(targets)
            n += len(targets)
        logs = {"loss": running / max(n, 1)}
        if val_loader is not None:
            logs["val_loss"] = evaluate(model, val_loader, loss_fn, device)  # expect: missing-train-after-eval
        logs_per_epoch.append(logs)
        if any(cb(epoch, logs) for cb in callbacks):
            break
    return logs_per_epoch
