from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_loader(dataset, batch_size, train, distributed, workers=8):
    """Shuffled loader for training, fixed order for evaluation; DDP-aware."""
    sampler = DistributedSampler(dataset, shuffle=train) if distributed else None  # ok: set_epoch in train.py
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=train and sampler is None,  # ok: never together with a sampler
        sampler=sampler,
        num_workers=workers,
        pin_memory=True,
        drop_last=train,
    )
    return loader, sampler
