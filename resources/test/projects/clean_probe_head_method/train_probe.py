import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from engine import evaluate, train_epoch
from model import ProbeClassifier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(d_model=64, nhead=4, batch_first=True), num_layers=2
    )
    classifier = ProbeClassifier(encoder, hidden=64, n_classes=3).to(device)
    optimizer = torch.optim.Adam(classifier.head.parameters(), lr=args.lr)

    x = torch.randn(512, 16, 64)
    y = torch.randint(0, 3, (512,))
    train_loader = DataLoader(TensorDataset(x[:448], y[:448]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[448:], y[448:]), batch_size=64)

    for epoch in range(args.epochs):
        train_epoch(classifier, train_loader, optimizer, device)  # ok: start_head_training() restores the head's mode
        acc = evaluate(classifier, val_loader, device)
        print(f"epoch {epoch}: val acc {acc:.3f}")


if __name__ == "__main__":
    main()
