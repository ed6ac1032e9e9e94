import argparse
import glob
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from vocoder.datasets import MelDataset
from vocoder.models import Generator
from vocoder.trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-dir", required=True)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--train-max-steps", type=int, default=400000)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dataset = MelDataset(sorted(glob.glob(os.path.join(args.train_dir, "*.npz"))))
    sampler = DistributedSampler(dataset, shuffle=True)  # expect: distributed-sampler-without-set-epoch
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, num_workers=2)
    model = Generator().cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4)
    trainer = Trainer(
        steps=0,
        data_loader=loader,
        model=model,
        optimizer=optimizer,
        config={"train_max_steps": args.train_max_steps},
    )
    trainer.run()


if __name__ == "__main__":
    main()
