import argparse
import logging

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from model import VGGLite
from trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--clip", type=float, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    norm = transforms.Normalize((0.4914, 0.4822, 0.4465), (0.247, 0.243, 0.261))
    train_set = datasets.CIFAR10(args.data, train=True, download=True, transform=transforms.Compose(
        [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor(), norm]))
    test_set = datasets.CIFAR10(args.data, train=False, download=True,
                                transform=transforms.Compose([transforms.ToTensor(), norm]))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4)
    test_loader = DataLoader(test_set, batch_size=256, num_workers=4)

    model = VGGLite().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[50, 75], gamma=0.1)  # expect: scheduler-never-stepped
    trainer = Trainer(model, optimizer, torch.nn.CrossEntropyLoss(), device, scheduler=scheduler, grad_clip=args.clip)
    trainer.fit(train_loader, test_loader, args.epochs)
    torch.save(model.state_dict(), "vgg_lite.pt")


if __name__ == "__main__":
    main()
