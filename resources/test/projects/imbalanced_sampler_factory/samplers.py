from collections import Counter

import torch
from torch.utils.data import WeightedRandomSampler


def class_balanced_sampler(labels, num_samples=None):
    """Draw every class equally often: weight each sample by 1 / frequency of its class."""
    counts = Counter(int(t) for t in labels)
    weights = torch.tensor([1.0 / counts[int(t)] for t in labels], dtype=torch.double)
    return WeightedRandomSampler(weights, num_samples or len(weights), replacement=True)
