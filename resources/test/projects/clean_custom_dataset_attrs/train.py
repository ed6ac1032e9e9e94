import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from dataset import SensorSequences, pad_collate
from model import GRUActivityNet


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/har.npz")
    p.add_argument("--epochs", type=int, default=30)
    args = p.parse_args()

    train_set = SensorSequences(args.data, train=True)
    test_set = SensorSequences(args.data, train=False)
    print("train recordings:", len(train_set.train_data), "classes:", train_set.train_labels.unique().tolist())  # ok: our own attributes
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, collate_fn=pad_collate)
    test_loader = DataLoader(test_set, batch_size=256, collate_fn=pad_collate)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = GRUActivityNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for x, lengths, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x, lengths), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()  # ok: a Python float

        model.eval()
        correct = 0
        with torch.no_grad():
            for x, lengths, y in test_loader:
                correct += (model(x.to(device), lengths).argmax(1).cpu() == y).sum().item()
        print(f"epoch {epoch}: loss {total / len(train_loader):.4f} test acc {correct / len(test_set):.4f}")
    torch.save(model.state_dict(), "gru_har.pt")


if __name__ == "__main__":
    main()
