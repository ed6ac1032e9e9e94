"""torchrun --nproc_per_node=4 train_ddp.py --data /datasets/cifar100"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

from data import build_train_loader, build_val_loader, cifar100


def train_one_epoch(model, loader, criterion, optimizer, device):
    model.train()
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    stats = torch.zeros(2, device=device)
    for images, labels in loader:
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        stats[0] += (model(images).argmax(1) == labels).sum()
        stats[1] += labels.numel()
    dist.all_reduce(stats)
    return (stats[0] / stats[1]).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=64, help="per GPU")
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)

    train_loader = build_train_loader(cifar100(args.data, train=True), args.batch_size)
    val_loader = build_val_loader(cifar100(args.data, train=False), 256)
    model = DDP(resnet50(num_classes=100).to(device), device_ids=[local_rank])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * dist.get_world_size(), momentum=0.9,
                                weight_decay=5e-5)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    for epoch in range(args.epochs):
        train_one_epoch(model, train_loader, criterion, optimizer, device)
        scheduler.step()
        acc = validate(model, val_loader, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: top-1 {acc:.4f}")
            torch.save(model.module.state_dict(), "resnet50_cifar100.pt")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
