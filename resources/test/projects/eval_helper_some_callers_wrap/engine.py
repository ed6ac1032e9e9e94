import torch


def train_epoch(model, loader, optimizer, criterion, device):
    model.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device):
    model.eval()
    correct, total = 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        predicted = model(images).argmax(dim=1)  # expect: eval-without-no-grad
        correct += (predicted == labels).sum().item()
        total += labels.size(0)
    return correct / total


def validation_loss(model, loader, criterion, device):
    model.eval()
    total = 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        total += criterion(model(images), labels).item()
    return total / len(loader)


def run_validation(model, loader, criterion, device):
    return validation_loss(model, loader, criterion, device)
