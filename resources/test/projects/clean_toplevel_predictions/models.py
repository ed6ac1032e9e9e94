import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, n_in, n_hidden, n_out, p=0.3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, n_hidden),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(n_hidden, n_out),
        )

    def forward(self, x):
        return self.net(x)


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(16 * 14 * 14, classes)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


class Generator(nn.Module):
    def __init__(self, nz=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nz, 256),
            nn.BatchNorm1d(256),
            nn.ReLU(),
            nn.Linear(256, 784),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)
