import torch
from torch.utils.data import DataLoader, TensorDataset
from torchvision import datasets


def get_data(root="~/data/FMNIST"):
    train = datasets.FashionMNIST(root, download=True, train=True)
    val = datasets.FashionMNIST(root, download=True, train=False)
    to_ds = lambda d: TensorDataset(d.data.float().view(-1, 28 * 28) / 255, d.targets)
    trn_dl = DataLoader(to_ds(train), batch_size=32, shuffle=True)
    val_dl = DataLoader(to_ds(val), batch_size=len(val.data), shuffle=False)
    return trn_dl, val_dl
