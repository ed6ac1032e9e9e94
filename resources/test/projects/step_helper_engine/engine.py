import torch


def train_step(model, batch, optimizer, criterion, device):
    """Forward, backward and update on one batch. Returns the batch loss."""
    inputs, targets = batch
    inputs = inputs.to(device, non_blocking=True)
    targets = targets.to(device, non_blocking=True)
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    loss.backward()
    optimizer.step()
    return loss


@torch.no_grad()
def evaluate(model, loader, criterion, device):
    model.eval()
    loss_sum, correct, n = 0.0, 0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        outputs = model(inputs)
        loss_sum += criterion(outputs, targets).item() * targets.size(0)
        correct += (outputs.argmax(1) == targets).sum().item()
        n += targets.size(0)
    model.train()
    return loss_sum / n, correct / n
