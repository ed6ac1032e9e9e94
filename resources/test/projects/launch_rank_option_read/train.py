"""python -m torch.distributed.launch --nproc_per_node=4 train.py"""
import argparse

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import datasets, transforms
from torchvision.models import resnet18

from engine.distributed import is_main_process, setup_distributed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/datasets/cifar10")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--local_rank", type=int, default=0)  # expect: local-rank-argparse-underscore
    args = parser.parse_args()

    device = setup_distributed(args)
    dataset = datasets.CIFAR10(args.data, train=True, transform=transforms.ToTensor())
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=128, sampler=sampler, num_workers=4)
    model = DistributedDataParallel(resnet18(num_classes=10).to(device), device_ids=[device.index])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
        if is_main_process():
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    if is_main_process():
        torch.save(model.module.state_dict(), "cifar_resnet18.pt")


if __name__ == "__main__":
    main()
