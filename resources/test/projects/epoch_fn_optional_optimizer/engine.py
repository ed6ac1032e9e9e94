import torch


def run_epoch(model, loader, criterion, optimizer=None, device="cpu"):
    training = optimizer is not None
    model.train(training)
    total, count = 0.0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        if training:
            optimizer.zero_grad()
        loss = criterion(model(inputs), targets)  # expect: eval-without-no-grad
        if training:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        total += loss.item() * len(targets)
        count += len(targets)
    return total / max(count, 1)


def run_epoch_managed(model, loader, criterion, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total = 0.0
    with torch.set_grad_enabled(training):
        for inputs, targets in loader:
            loss = criterion(model(inputs), targets)
            if training:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total / len(loader)


def fit_step(model, batch, criterion, optimizer, update=True):
    inputs, targets = batch
    loss = criterion(model(inputs), targets)
    if update:
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()
