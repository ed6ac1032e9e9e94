import torch
from torch.utils.data import Dataset


class ReviewDataset(Dataset):
    """Tokenised reviews saved by the preprocessing step: (label, token ids) pairs."""

    def __init__(self, split):
        self.items = torch.load(f"reviews_{split}.pt", weights_only=True)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        label, tokens = self.items[i]
        return label, tokens
