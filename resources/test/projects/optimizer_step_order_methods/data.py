import numpy as np
import torch
from torch.utils.data import Dataset


class WindowDataset(Dataset):
    """Sliding windows over a (time, features) array; predicts the next `horizon` values of column 0."""

    def __init__(self, series, window=168, horizon=24):
        self.series = torch.as_tensor(np.asarray(series, dtype=np.float32))
        self.window = window
        self.horizon = horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1

    def __getitem__(self, i):
        x = self.series[i:i + self.window]
        y = self.series[i + self.window:i + self.window + self.horizon, 0]
        return x, y
