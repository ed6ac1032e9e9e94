import argparse
import json
import os

import torch
import torch.nn as nn
from tqdm import tqdm

from datasets import cifar100_loaders
from engine import evaluate, train_step
from models import resnet_tiny


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--out", default="checkpoints")
    return parser.parse_args()


def main():
    args = parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, test_loader = cifar100_loaders(args.data, args.batch_size)
    model = resnet_tiny(num_classes=100).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[50, 75], gamma=0.1)
    os.makedirs(args.out, exist_ok=True)

    history = []
    for epoch in range(args.epochs):
        model.train()
        epoch_loss = 0.0
        for batch in tqdm(train_loader, desc=f"epoch {epoch}"):
            loss = train_step(model, batch, optimizer, criterion, device)  # expect: missing-zero-grad
            epoch_loss += loss  # expect: accumulate-loss-tensor
        scheduler.step()
        val_loss, val_acc = evaluate(model, test_loader, criterion, device)
        history.append({"epoch": epoch, "train_loss": float(epoch_loss) / len(train_loader),
                        "val_loss": val_loss, "val_acc": val_acc})
        torch.save(model.state_dict(), os.path.join(args.out, "last.pt"))
    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump(history, f, indent=2)


if __name__ == "__main__":
    main()
