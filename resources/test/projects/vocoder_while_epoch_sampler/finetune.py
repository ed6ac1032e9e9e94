import glob
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from vocoder.datasets import MelDataset
from vocoder.finetune_trainer import FinetuneTrainer
from vocoder.models import Generator


def main(data_dir):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dataset = MelDataset(sorted(glob.glob(os.path.join(data_dir, "*.npz"))))
    sampler = DistributedSampler(dataset, shuffle=True)  # ok: the trainer calls set_epoch
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = Generator().cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-5)
    FinetuneTrainer(loader, model, optimizer, max_steps=20000).run()


if __name__ == "__main__":
    main(sys.argv[1])
