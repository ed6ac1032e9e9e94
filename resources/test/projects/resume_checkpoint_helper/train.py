import argparse
import logging
import os

import torch
import torch.nn as nn
from torchvision import models

from checkpoint import save_checkpoint
from data import train_loader, val_loader

logger = logging.getLogger("train")


def get_parser():
    p = argparse.ArgumentParser(description="image classification training")
    p.add_argument("data")
    p.add_argument("--arch", default="resnet34")
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--start-epoch", type=int, default=0)
    p.add_argument("-b", "--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--resume", default="", type=str, help="path to latest checkpoint")
    p.add_argument("--output-dir", default="checkpoints")
    return p


def train(loader, model, criterion, optimizer, device, epoch):
    model.train()
    for i, (images, target) in enumerate(loader):
        images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 100 == 0:
            logger.info("epoch %d iter %d loss %.4f", epoch, i, loss.item())


@torch.no_grad()
def validate(loader, model, device):
    model.eval()
    correct = total = 0
    for images, target in loader:
        images, target = images.to(device, non_blocking=True), target.to(device, non_blocking=True)
        correct += (model(images).argmax(1) == target).sum().item()
        total += target.numel()
    return 100.0 * correct / total


def main():
    args = get_parser().parse_args()
    logging.basicConfig(level=logging.INFO)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = models.get_model(args.arch, weights=None).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    best_acc1 = 0.0

    if args.resume:
        if os.path.isfile(args.resume):
            logger.info("loading checkpoint '%s'", args.resume)
            checkpoint = torch.load(args.resume, map_location=device, weights_only=True)
            args.start_epoch = checkpoint["epoch"]
            best_acc1 = checkpoint["best_acc1"]
            model.load_state_dict(checkpoint["state_dict"])  # expect: resume-without-optimizer-state
            logger.info("loaded checkpoint '%s' (epoch %d)", args.resume, checkpoint["epoch"])
        else:
            logger.warning("no checkpoint found at '%s'", args.resume)

    train_dl = train_loader(args.data, args.batch_size, args.workers)
    val_dl = val_loader(args.data, args.batch_size, args.workers)
    for epoch in range(args.start_epoch, args.epochs):
        train(train_dl, model, criterion, optimizer, device, epoch)
        scheduler.step()
        acc1 = validate(val_dl, model, device)
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({
            "epoch": epoch + 1,
            "arch": args.arch,
            "state_dict": model.state_dict(),
            "best_acc1": best_acc1,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }, is_best, args.output_dir)


if __name__ == "__main__":
    main()
