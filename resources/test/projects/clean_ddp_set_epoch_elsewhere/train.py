import argparse
import os

import torch
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from data import make_loader
from engine import evaluate, train_one_epoch
from toydata import RandomRegression


class Trainer:
    def __init__(self, model, dataset, optimizer, gpu_id, batch_size):
        self.gpu_id = gpu_id
        self.model = DDP(model.to(gpu_id), device_ids=[gpu_id])
        self.sampler = DistributedSampler(dataset)
        self.loader = DataLoader(dataset, batch_size=batch_size, sampler=self.sampler)
        self.optimizer = optimizer

    def _reseed(self, epoch):
        self.sampler.set_epoch(epoch)

    def _one_epoch(self, epoch):
        self._reseed(epoch)
        for inputs, targets in self.loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(inputs.to(self.gpu_id)), targets.to(self.gpu_id))
            loss.backward()
            self.optimizer.step()

    def fit(self, epochs):
        for epoch in range(epochs):
            self._one_epoch(epoch)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--trainer", action="store_true")
    args = parser.parse_args()
    init_process_group(backend="nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    dataset = RandomRegression(4096)
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    if args.trainer:
        Trainer(model, dataset, optimizer, rank, args.batch_size).fit(args.epochs)
    else:
        loader = make_loader(dataset, args.batch_size)
        val_set = RandomRegression(512)
        val_sampler = DistributedSampler(val_set)  # ok: evaluation order does not matter
        val_loader = DataLoader(val_set, batch_size=args.batch_size, sampler=val_sampler)
        ddp_model = DDP(model.to(rank), device_ids=[rank])
        for epoch in range(args.epochs):
            train_one_epoch(ddp_model, loader, optimizer, epoch, rank)
            print(evaluate(ddp_model, val_loader, rank))
    destroy_process_group()


if __name__ == "__main__":
    main()
