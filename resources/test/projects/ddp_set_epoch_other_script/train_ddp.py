import argparse
import os

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from toydata import RandomRegression


def setup(rank, world_size):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")
    init_process_group(backend="nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)


class Trainer:
    def __init__(self, model, train_loader, optimizer, gpu_id, checkpoint_every):
        self.gpu_id = gpu_id
        self.model = DDP(model.to(gpu_id), device_ids=[gpu_id])
        self.train_loader = train_loader
        self.optimizer = optimizer
        self.checkpoint_every = checkpoint_every

    def _step(self, inputs, targets):
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(inputs), targets)
        loss.backward()
        self.optimizer.step()

    def _one_epoch(self, epoch):
        print(f"[rank {self.gpu_id}] epoch {epoch}: {len(self.train_loader)} steps")
        for inputs, targets in self.train_loader:
            self._step(inputs.to(self.gpu_id), targets.to(self.gpu_id))

    def _checkpoint(self, epoch):
        torch.save(self.model.module.state_dict(), "checkpoint.pt")
        print(f"epoch {epoch}: checkpoint written")

    def fit(self, epochs):
        for epoch in range(epochs):
            self._one_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.checkpoint_every == 0:
                self._checkpoint(epoch)


def build_objects():
    dataset = RandomRegression(4096)
    model = torch.nn.Linear(20, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    return dataset, model, optimizer


def make_loader(dataset, batch_size):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=True,
        shuffle=False,
        sampler=DistributedSampler(dataset),  # expect: distributed-sampler-without-set-epoch
    )


def worker(rank, world_size, epochs, checkpoint_every, batch_size):
    setup(rank, world_size)
    dataset, model, optimizer = build_objects()
    loader = make_loader(dataset, batch_size)
    trainer = Trainer(model, loader, optimizer, rank, checkpoint_every)
    trainer.fit(epochs)
    destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("epochs", type=int)
    parser.add_argument("checkpoint_every", type=int)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    world_size = torch.cuda.device_count()
    mp.spawn(worker, args=(world_size, args.epochs, args.checkpoint_every, args.batch_size), nprocs=world_size)
