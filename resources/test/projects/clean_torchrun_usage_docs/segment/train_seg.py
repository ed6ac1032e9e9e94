import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    # ok: the README starts this file with torchrun, which passes no --local-rank
    parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
    args = parser.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 4).cuda(), device_ids=[args.local_rank])
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(args.epochs):
        optimizer.zero_grad()
        loss = model(torch.randn(2, 4, device="cuda")).pow(2).mean()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
