import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from model import MLP
from utils.checkpoint import load_checkpoint, save_checkpoint
from utils.logging_utils import setup_logger


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--features", required=True, help=".npz with x_train, y_train")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--out-dir", default="runs/mlp")
    parser.add_argument("--resume", default=None)
    return parser.parse_args()


def main():
    args = parse_args()
    log = setup_logger("train")
    os.makedirs(args.out_dir, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    arrays = np.load(args.features)
    x = torch.from_numpy(arrays["x_train"]).float()
    y = torch.from_numpy(arrays["y_train"]).long()
    args.num_classes = int(y.max()) + 1
    loader = DataLoader(TensorDataset(x, y), batch_size=256, shuffle=True)
    model = MLP(x.shape[1], args.hidden, args.num_classes, depth=args.depth).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()

    start = 0
    if args.resume:
        ckpt = load_checkpoint(args.resume, device)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start = ckpt["epoch"] + 1

    for epoch in range(start, args.epochs):
        model.train()
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item() * xb.size(0)
        log.info("epoch %d loss %.4f", epoch, total / len(loader.dataset))
        save_checkpoint(os.path.join(args.out_dir, "last.pt"), model, optimizer, epoch, args)


if __name__ == "__main__":
    main()
