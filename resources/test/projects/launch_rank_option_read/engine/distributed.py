import os

import torch
import torch.distributed as dist


def setup_distributed(args):
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
    return torch.device("cuda", args.local_rank)


def is_main_process():
    # Logging only on the first process of each node.
    return int(os.environ.get("LOCAL_RANK", "0")) == 0
