import argparse
import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from common import accuracy, build_model, image_folder


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--out", default="runs/base")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = image_folder(os.path.join(args.data, "train"), train=True)
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8)
    val_loader = DataLoader(image_folder(os.path.join(args.data, "val"), train=False), batch_size=256, num_workers=8)
    model = build_model(len(train_set.classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)

    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        scheduler.step()
        acc = accuracy(model, val_loader, device)
        torch.save({
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "epoch": epoch,
            "val_acc": acc,
            "classes": train_set.classes,
            "args": vars(args),
        }, os.path.join(args.out, "last.pt"))


if __name__ == "__main__":
    main()
