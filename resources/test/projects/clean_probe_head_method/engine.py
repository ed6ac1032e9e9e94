import torch
import torch.nn.functional as F


def train_epoch(classifier, loader, optimizer, device, log_every=50):
    classifier.start_head_training()
    running = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(classifier(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
        if (step + 1) % log_every == 0:
            print(f"step {step + 1}: loss {running / log_every:.4f}")
            running = 0.0


@torch.no_grad()
def evaluate(classifier, loader, device):
    classifier.eval()
    correct = total = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        correct += (classifier(x).argmax(dim=1) == y).sum().item()
        total += y.numel()
    return correct / max(total, 1)
