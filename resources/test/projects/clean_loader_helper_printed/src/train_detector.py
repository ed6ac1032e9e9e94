"""Fine-tune Faster R-CNN; the validation loss needs training mode (the model returns its
losses only there)."""
import torch

from tools import config


def train_one_epoch(model, optimizer, loader):
    model.train()
    for images, targets in loader:
        loss_dict = model(images, targets)
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validation_loss(model, loader):
    total = 0.0
    with torch.no_grad():
        for images, targets in loader:
            loss_dict = model(images, targets)  # ok: losses are returned in training mode only
            total += sum(loss_dict.values()).item()
    return total / max(len(loader), 1)


def main(train_loader, val_loader):
    detector = config.load_detector(num_classes=3)
    optimizer = torch.optim.SGD(detector.parameters(), lr=0.005, momentum=0.9)
    for epoch in range(10):
        train_one_epoch(detector, optimizer, train_loader)
        print(epoch, validation_loss(detector, val_loader))
