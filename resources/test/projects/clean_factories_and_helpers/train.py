import os

import torch
import torch.nn as nn
import torch.distributed as dist
from torchvision import datasets, transforms

from data import build_train_loader
from engine import MultiTrainer, train_step, train_step_float


def main(epochs=10):
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    device = torch.device("cuda")
    ds = datasets.CIFAR10("data", train=True, download=True, transform=transforms.ToTensor())
    loader = build_train_loader(ds, 128)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3072, 10)).to(device)
    optimizers = {"sgd": torch.optim.SGD(model.parameters(), lr=0.1)}
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        running = 0.0
        floats = 0.0
        for batch in loader:
            loss = train_step(model, batch, optimizers, criterion, device)
            running += loss.item()
            floats += train_step_float(model, batch, optimizers["sgd"], criterion, device)
        print(epoch, running / len(loader), floats / len(loader))
    trainer = MultiTrainer(model, [torch.optim.Adam(model.parameters())], criterion)
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        trainer.epoch(loader)


if __name__ == "__main__":
    main()
