import os

import torch
import torch.distributed as dist


def setup(args):
    """Join the process group when a launcher started us (it sets RANK and LOCAL_RANK)."""
    if "RANK" not in os.environ:
        args.distributed = False
        args.gpu = 0
        return
    args.distributed = True
    args.rank = int(os.environ["RANK"])
    args.gpu = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(args.gpu)
    dist.init_process_group("nccl")


def is_main():
    return not dist.is_initialized() or dist.get_rank() == 0
