import argparse
import os
import random

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args_example():
    """A reference parser to copy into new tools; kept for the option conventions."""
    parser = argparse.ArgumentParser(description="example arguments")
    parser.add_argument("--string-variable", type=str, default="string", help="explain variable")
    parser.add_argument("--int-variable", type=int, default=1, help="explain variable")
    parser.add_argument("--bool-variable", default=False, action="store_true", help="explain variable")
    parser.add_argument("--local_rank", type=int, default=0, help="LOCAL_PROCESS_RANK in DistributedDataParallel model")  # ok: nothing calls this template; training runs under torchrun
    return parser.parse_args()


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def init_distributed(config):
    config.local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(config.local_rank)
    dist.init_process_group(backend="nccl", init_method="env://")
    config.world_size = dist.get_world_size()


def build_training_mode(config, model):
    local_rank = config.local_rank
    model = model.cuda()
    return DistributedDataParallel(model, device_ids=[local_rank], output_device=local_rank)
