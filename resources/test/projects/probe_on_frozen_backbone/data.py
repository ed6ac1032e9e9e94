import torch
from torch.utils.data import DataLoader, TensorDataset


def loaders(batch_size=64):
    train = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
    val = TensorDataset(torch.randn(128, 3, 32, 32), torch.randint(0, 10, (128,)))
    return (
        DataLoader(train, batch_size=batch_size, shuffle=True),
        DataLoader(val, batch_size=batch_size),
    )
