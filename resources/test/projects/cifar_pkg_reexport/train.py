import argparse
import logging
import os

import torch
import torch.nn as nn
from tqdm import tqdm

from cifar import SmallCNN, build_loaders

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")


def train_epoch(model, loader, criterion, optimizer, device):
    model.train()
    total, seen = 0.0, 0
    for images, targets in tqdm(loader, leave=False):
        images, targets = images.to(device, non_blocking=True), targets.to(device, non_blocking=True)
        outputs = model(images)
        loss = criterion(outputs, targets)  # expect: cross-entropy-after-softmax
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item() * images.size(0)
        seen += images.size(0)
    return total / seen


@torch.no_grad()
def evaluate(model, loader, criterion, device):
    model.eval()
    total, correct, seen = 0.0, 0, 0
    for images, targets in loader:
        images, targets = images.to(device), targets.to(device)
        outputs = model(images)
        total += criterion(outputs, targets).item() * images.size(0)  # expect: cross-entropy-after-softmax
        correct += (outputs.argmax(dim=1) == targets).sum().item()  # ok: accuracy from probabilities
        seen += images.size(0)
    return total / seen, correct / seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="./data")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--out", default="runs/cifar")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, test_loader = build_loaders(args.data, args.batch_size)
    model = SmallCNN().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    os.makedirs(args.out, exist_ok=True)
    best_acc = 0.0
    for epoch in range(args.epochs):
        train_loss = train_epoch(model, train_loader, criterion, optimizer, device)
        val_loss, val_acc = evaluate(model, test_loader, criterion, device)
        scheduler.step()
        log.info("epoch %d train_loss %.3f val_loss %.3f val_acc %.4f", epoch, train_loss, val_loss, val_acc)
        if val_acc > best_acc:
            best_acc = val_acc
            torch.save(model.state_dict(), os.path.join(args.out, "best.pt"))


if __name__ == "__main__":
    main()
