import torch
from torch.utils.data import Dataset


class SegmentationSet(Dataset):
    def __init__(self, split, n=64):
        self.split = split
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, 32, 32, generator=g), torch.randint(0, 4, (32, 32), generator=g)


class FeatureSet(Dataset):
    def __init__(self, split, n=512):
        self.split = split
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(128, generator=g), int(torch.randint(0, 10, (1,), generator=g))
