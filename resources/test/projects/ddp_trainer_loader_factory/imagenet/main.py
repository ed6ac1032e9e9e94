import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms


def train(loader, model, criterion, optimizer, device):
    model.train()
    for images, target in loader:
        images, target = images.to(device), target.to(device)
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--epochs", type=int, default=90)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    train_set = datasets.ImageFolder(args.data, transforms.ToTensor())
    train_sampler = DistributedSampler(train_set)  # ok: reseeded below
    train_loader = DataLoader(train_set, batch_size=256, sampler=train_sampler, num_workers=4)
    model = models.resnet18().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, device)


if __name__ == "__main__":
    main()
