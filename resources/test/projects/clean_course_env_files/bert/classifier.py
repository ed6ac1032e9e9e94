import argparse
import random

import numpy as np
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, hidden, n_labels):
        super().__init__()
        self.proj = nn.Linear(hidden, n_labels)

    def forward(self, x):
        return self.proj(x)


def save_model(model, optimizer, args, path):
    save_info = {
        "model": model.state_dict(),
        "optim": optimizer.state_dict(),
        "args": args,
        "system_rng": random.getstate(),
        "numpy_rng": np.random.get_state(),
        "torch_rng": torch.random.get_rng_state(),
    }
    torch.save(save_info, path)


def train(args):
    model = Classifier(16, 3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    x, y = torch.randn(32, 16), torch.randint(0, 3, (32,))
    for _ in range(args.epochs):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    save_model(model, optimizer, args, args.filepath)


def test(args):
    with torch.no_grad():
        saved = torch.load(args.filepath)  # ok: setup.sh installs pytorch 1.12, no weights-only default
        model = Classifier(16, 3)
        model.load_state_dict(saved["model"])
        model.eval()
        print(model(torch.randn(4, 16)).argmax(-1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--filepath", default="classifier.pt")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    train(args)
    test(args)
