import random

import numpy as np
import torch
from torchvision import datasets, transforms

MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def get_loaders(data_dir, batch_size, test_batch_size, use_cuda):
    tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MNIST_MEAN, MNIST_STD)])
    train_set = datasets.MNIST(data_dir, train=True, download=True, transform=tfm)
    test_set = datasets.MNIST(data_dir, train=False, transform=tfm)
    extra = {"num_workers": 2, "pin_memory": True} if use_cuda else {}
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=batch_size, shuffle=True, **extra)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=test_batch_size, shuffle=False, **extra)
    return train_loader, test_loader
