import torch


def train_one_epoch(model, optimizer, loader, device):
    model.train()
    criterion = torch.nn.CrossEntropyLoss()
    total = 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def evaluate(model, data_loader, device):
    model.eval()
    correct = 0
    for images, labels in data_loader:
        correct += (model(images.to(device)).argmax(1) == labels.to(device)).sum().item()
    return correct / len(data_loader.dataset)


def count_hits(model, data_loader, device):
    model.eval()
    hits = 0
    for images, labels in data_loader:
        hits += (model.predict(images.to(device)) == labels.to(device)).sum().item()  # ok: predict runs under the project's @nograd
    return hits
