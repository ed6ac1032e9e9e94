import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3)
        self.fc = nn.Linear(16 * 26 * 26, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        return self.fc(torch.flatten(x, 1))


def mnist(train=True):
    return datasets.MNIST("data", train=train, download=True, transform=transforms.ToTensor())
