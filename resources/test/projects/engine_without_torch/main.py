import argparse
import logging

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from engine import evaluate, train_one_epoch
from model import FlowerNet


def get_args():
    p = argparse.ArgumentParser(description="Flowers-102 from scratch")
    p.add_argument("--root", default="data")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=4)
    return p.parse_args()


def main():
    args = get_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_tf = transforms.Compose([transforms.RandomResizedCrop(160), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    val_tf = transforms.Compose([transforms.Resize(176), transforms.CenterCrop(160), transforms.ToTensor(), norm])
    train_set = datasets.Flowers102(args.root, split="train", transform=train_tf, download=True)
    val_set = datasets.Flowers102(args.root, split="val", transform=val_tf, download=True)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False, num_workers=args.workers)

    model = FlowerNet().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train_loader, optimizer, criterion, device, epoch)
        val_loss, val_acc = evaluate(model, val_loader, criterion, device)
        logging.info("epoch %d: train %.3f val %.3f acc %.3f", epoch, train_loss, val_loss, val_acc)
    torch.save(model.state_dict(), "flowernet.pt")


if __name__ == "__main__":
    main()
