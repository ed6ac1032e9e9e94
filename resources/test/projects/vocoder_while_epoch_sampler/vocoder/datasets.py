import numpy as np
import torch
from torch.utils.data import Dataset


class MelDataset(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, idx):
        item = np.load(self.files[idx])
        return torch.from_numpy(item["mel"]), torch.from_numpy(item["audio"])
