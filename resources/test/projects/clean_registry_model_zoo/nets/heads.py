import torch.nn as nn


class LinearProbe(nn.Module):
    def __init__(self, dim=32, num_classes=10):
        super().__init__()
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, x):
        return self.fc(x)


class MLPHead(nn.Module):
    def __init__(self, dim=32, num_classes=10):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(dim, num_classes)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))
