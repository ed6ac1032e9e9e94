import torch
from torch.utils.data import Dataset


class RandomRegression(Dataset):
    def __init__(self, size, features=20):
        self.inputs = torch.randn(size, features)
        self.targets = torch.randn(size, 1)

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, index):
        return self.inputs[index], self.targets[index]
