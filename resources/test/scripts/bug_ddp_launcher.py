import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def setup():
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    return rank


def sync_and_log(msg):
    dist.barrier()
    print(msg)


def run(dataset, build_model, epochs=90):
    rank = setup()
    sampler = DistributedSampler(dataset)  # expect: distributed-sampler-without-set-epoch
    loader = DataLoader(dataset, batch_size=256, sampler=sampler, num_workers=8)
    model = DistributedDataParallel(build_model().cuda())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss().cuda()
    for epoch in range(epochs):
        model.train()
        for images, target in loader:
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            sync_and_log(f"epoch {epoch} done")  # expect: collective-in-rank-conditional
        torch.save(model.state_dict(), f"checkpoint_{epoch}.pth")  # expect: save-checkpoint-on-all-ranks, ddp-state-dict-module-prefix
