import torch
from torch.utils.data import Dataset


class Cityscapes(Dataset):
    def __init__(self, root, split="val"):
        self.samples = torch.load(f"{root}/{split}_index.pt", weights_only=True)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        image, mask = self.samples[i]
        return image, mask
