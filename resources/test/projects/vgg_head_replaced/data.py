import torch
from torch.utils.data import DataLoader, TensorDataset


def test_loader(batch_size=16):
    images = torch.randn(64, 3, 224, 224)
    labels = torch.randint(0, 2, (64,))
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size)
