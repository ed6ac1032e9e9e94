"""Wide ResNet on CIFAR-100 (launch commands in TRAINING.md)."""
import argparse

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms
from torchvision.models import wide_resnet50_2

import dist_utils


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="./data")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--local_rank", type=int, default=-1)  # expect: local-rank-argparse-underscore
    return p.parse_args()


def main():
    args = parse()
    dist_utils.setup(args)
    data = datasets.CIFAR100(args.data, train=True, download=True, transform=transforms.ToTensor())
    sampler = DistributedSampler(data) if args.distributed else None
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, shuffle=sampler is None)
    model = wide_resnet50_2(num_classes=100).cuda(args.gpu)
    if args.distributed:
        model = DDP(model, device_ids=[args.gpu])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            x, y = x.cuda(args.gpu), y.cuda(args.gpu)
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist_utils.is_main():
            torch.save(model.state_dict(), "wrn.pth")


if __name__ == "__main__":
    main()
