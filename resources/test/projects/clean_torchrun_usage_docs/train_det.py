"""
Train a detector on a custom dataset.

Usage - Single-GPU training:
    $ python train_det.py --data coco128.yaml --epochs 3

Usage - Multi-GPU DDP training:
    $ python -m torch.distributed.run --nproc_per_node 4 --master_port 1 train_det.py --data coco128.yaml
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn

LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))  # set by torchrun
RANK = int(os.getenv("RANK", -1))


def parse_opt():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="coco128.yaml")
    parser.add_argument("--epochs", type=int, default=3)
    # ok: never read, and the usage above launches with torch.distributed.run (no option passed)
    parser.add_argument("--local_rank", type=int, default=-1, help="Automatic DDP Multi-GPU argument, do not modify")
    return parser.parse_args()


def main(opt):
    device = torch.device("cuda", LOCAL_RANK) if LOCAL_RANK != -1 else torch.device("cpu")
    if LOCAL_RANK != -1:
        torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group(backend="nccl")
    model = nn.Linear(8, 2).to(device)
    if LOCAL_RANK != -1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[LOCAL_RANK])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(opt.epochs):
        x = torch.randn(16, 8, device=device)
        y = torch.randint(0, 2, (16,), device=device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    if RANK in (-1, 0):
        print(f"done {opt.data}")


if __name__ == "__main__":
    main(parse_opt())
