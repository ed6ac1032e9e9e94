import argparse
import logging

import torch
from torch import nn
from tqdm import tqdm

from data import make_loaders
from models import TabularNet

logger = logging.getLogger("tabular")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, val_loader, n_features, n_classes = make_loaders(args.csv, args.batch_size)
    model = TabularNet(n_features, n_classes).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)

    def train_epoch(epoch):
        total = 0.0
        for features, target in tqdm(train_loader, desc=f"epoch {epoch}"):
            features, target = features.to(device), target.to(device)
            loss = criterion(model(features), target)
            loss.backward()
            optimizer.step()  # expect: missing-zero-grad
            total += loss.item() * features.size(0)
        return total / len(train_loader.dataset)

    @torch.no_grad()
    def evaluate():
        model.eval()
        correct = 0
        for features, target in val_loader:
            logits = model(features.to(device))
            correct += (logits.argmax(dim=1).cpu() == target).sum().item()
        return correct / len(val_loader.dataset)

    model.train()
    best = 0.0
    for epoch in range(args.epochs):
        train_loss = train_epoch(epoch)
        val_acc = evaluate()  # expect: missing-train-after-eval
        logger.info("epoch %d train loss %.4f val acc %.4f", epoch, train_loss, val_acc)
        if val_acc > best:
            best = val_acc
            torch.save(model.state_dict(), "tabular_best.pt")


if __name__ == "__main__":
    main()
