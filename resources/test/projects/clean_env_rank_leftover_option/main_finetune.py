"""Fine-tune a classifier; started with torchrun (see scripts/finetune.sh)."""
import argparse

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms
from torchvision.models import resnet18

from util.dist import init_distributed_mode, is_main_process


def get_args_parser():
    parser = argparse.ArgumentParser("fine-tuning", add_help=False)
    parser.add_argument("--batch_size", default=64, type=int)
    parser.add_argument("--epochs", default=10, type=int)
    parser.add_argument("--lr", default=1e-3, type=float)
    parser.add_argument("--data_path", default="/datasets/imagenet", type=str)
    # distributed training parameters
    parser.add_argument("--world_size", default=1, type=int)
    parser.add_argument("--local_rank", default=-1, type=int)  # ok: a leftover; the rank comes from LOCAL_RANK
    parser.add_argument("--dist_url", default="env://")
    return parser


def main(args):
    init_distributed_mode(args)
    device = torch.device("cuda")
    dataset = datasets.ImageFolder(args.data_path, transform=transforms.ToTensor())
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=8)
    model = resnet18(num_classes=1000).to(device)
    model = DistributedDataParallel(model, device_ids=[args.gpu])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for images, targets in loader:
            images, targets = images.to(device), targets.to(device)
            loss = criterion(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if is_main_process():
            torch.save(model.module.state_dict(), f"checkpoint-{epoch}.pth")


if __name__ == "__main__":
    main(get_args_parser().parse_args())
