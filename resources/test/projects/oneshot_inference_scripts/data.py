import numpy as np
import torch
from torch.utils.data import Dataset


class PointClouds(Dataset):
    def __init__(self, split, n=128, points=1024):
        rng = np.random.default_rng(0 if split == "train" else 1)
        self.x = rng.standard_normal((n, 3, points)).astype("float32")
        self.y = rng.integers(0, 4, (n, points))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), torch.from_numpy(self.y[i])
