import math

import torch


def train_one_epoch(model, criterion, loader, optimizer, device, epoch, accumulation_steps=1, scaler=None, max_norm=0.0):
    """One epoch of episodic training with gradient accumulation."""
    model.train()
    criterion.train()
    # Gradients start clean at the beginning of the epoch.
    optimizer.zero_grad()
    running = 0.0
    batch_idx = -1
    for batch_idx, (images, targets) in enumerate(loader):
        images = images.to(device)
        targets = targets.to(device)
        with torch.autocast(device_type=device.type, enabled=scaler is not None):
            loss = criterion(model(images), targets)
        value = loss.item()
        if not math.isfinite(value):
            raise RuntimeError(f"loss is {value} at epoch {epoch}")
        scaled = loss / accumulation_steps
        if scaler is not None:
            scaler.scale(scaled).backward()
        else:
            scaled.backward()
        if (batch_idx + 1) % accumulation_steps == 0:
            if max_norm > 0:
                if scaler is not None:
                    scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            if scaler is not None:
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()
            optimizer.zero_grad()
        running += value
    # The last window, when the epoch does not end on an accumulation boundary.
    total = batch_idx + 1
    if total % accumulation_steps != 0:
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad()
    return running / max(total, 1)
