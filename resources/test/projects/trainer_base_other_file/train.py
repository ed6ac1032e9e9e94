import argparse
import logging

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

from trainers import ClassifierTrainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/imagenette")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--resume", default="")
    parser.add_argument("--output-dir", default="runs/resnet18")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_set = datasets.ImageFolder(f"{args.data}/train", transforms.Compose([
        transforms.RandomResizedCrop(160), transforms.RandomHorizontalFlip(), transforms.ToTensor(), norm]))
    val_set = datasets.ImageFolder(f"{args.data}/val", transforms.Compose([
        transforms.Resize(192), transforms.CenterCrop(160), transforms.ToTensor(), norm]))
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=128, num_workers=8, pin_memory=True)

    model = models.resnet18(weights=None, num_classes=len(train_set.classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    trainer = ClassifierTrainer(model, optimizer, scheduler, nn.CrossEntropyLoss(), device, args.output_dir)
    if args.resume:
        trainer.resume(args.resume)
    trainer.fit(train_loader, val_loader, args.epochs)


if __name__ == "__main__":
    main()
