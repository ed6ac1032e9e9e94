from torch import nn


class Classifier(nn.Module):
    def __init__(self, n_in=784, n_out=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 128), nn.ReLU(), nn.Linear(128, n_out))

    def forward(self, x):
        return self.net(x)
