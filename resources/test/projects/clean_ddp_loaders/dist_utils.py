import os

import torch
import torch.distributed as dist


def init_distributed():
    """Returns (distributed, rank, local_rank, world_size); works without torchrun too."""
    if "RANK" not in os.environ:
        return False, 0, 0, 1
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    return True, dist.get_rank(), local_rank, dist.get_world_size()


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0
