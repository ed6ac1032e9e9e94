import torch
from tqdm import tqdm


def train_one_epoch(model, loader, criterion, optimizer, scaler, device):
    model.train()
    total = 0.0
    for images, labels in tqdm(loader, leave=False):
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=device.type == "cuda"):
            loss = criterion(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def evaluate(model, loader, device, num_classes, preview_batches=1):
    """Top-1 accuracy, a confusion matrix, and the first batches' predictions for the log."""
    model.eval()
    confusion = torch.zeros(num_classes, num_classes, dtype=torch.long)
    preview = []
    for i, (images, labels) in enumerate(loader):
        preds = model(images.to(device, non_blocking=True)).argmax(dim=1).cpu()
        confusion += torch.bincount(labels * num_classes + preds, minlength=num_classes ** 2).view(num_classes, -1)
        if i < preview_batches:
            preview.append((labels[:8].tolist(), preds[:8].tolist()))
    acc = confusion.diag().sum().item() / confusion.sum().item()
    return acc, confusion, preview
