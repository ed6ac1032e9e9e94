import torch
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer, device, on_step=None):
    model.train()
    total = 0.0
    for step, (images, labels) in enumerate(loader):
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)  # ok: logits
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item()
        if on_step is not None:
            on_step(step)
    return total / len(loader)


@torch.no_grad()
def evaluate(model, loader, device):
    was_training = model.training
    model.eval()
    correct = seen = 0
    loss_sum = 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)  # ok: eval mode and no_grad
        loss_sum += F.cross_entropy(logits, labels, reduction="sum").item()
        probs = logits.softmax(dim=1)  # ok: metrics only
        correct += (probs.argmax(dim=1) == labels).sum().item()
        seen += labels.numel()
    model.train(was_training)
    return loss_sum / seen, correct / seen
