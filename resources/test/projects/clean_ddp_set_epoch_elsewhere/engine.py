import torch
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer, epoch, device):
    loader.sampler.set_epoch(epoch)
    model.train()
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    total = 0.0
    for inputs, targets in loader:
        total += F.mse_loss(model(inputs.to(device)), targets.to(device)).item()
    return total / len(loader)
