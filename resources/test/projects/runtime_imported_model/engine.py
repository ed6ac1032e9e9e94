import torch


def train_one_epoch(model, loader, criterion, optimizer, device):
    model.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()


def predict_batch(model, images):
    model.eval()
    with torch.no_grad():
        return model.forward(images).argmax(1)  # expect: call-forward-directly
