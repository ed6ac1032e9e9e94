import torch
from torch.utils.data import Dataset


class RoIFeatures(Dataset):
    """Pooled region features and their labels, extracted beforehand."""

    def __init__(self, path):
        data = torch.load(path, weights_only=True)
        self.features, self.labels = data["features"], data["labels"]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.features[i], self.labels[i]
