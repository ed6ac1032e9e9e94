import torch


@torch.no_grad()
def validate(model, loader, device):
    correct = total = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        preds = model(images).argmax(dim=1)  # expect: missing-eval-mode
        correct += (preds == labels).sum().item()
        total += labels.numel()
    return correct / total
