import torch


def train_epoch(model, loader, criterion, optimizer, device):
    model.train()
    running = 0.0
    for inputs, labels in loader:
        inputs, labels = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()
        running += loss.item()
    return running / len(loader)


@torch.no_grad()
def predict(model, loader, device):
    model.eval()
    preds, targets = [], []
    for inputs, labels in loader:
        preds.append(model(inputs.to(device)).argmax(1).cpu())
        targets.append(labels)
    model.train()
    return torch.cat(preds), torch.cat(targets)
