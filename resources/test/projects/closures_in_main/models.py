from torch import nn


class TabularNet(nn.Module):
    def __init__(self, n_features, n_classes, hidden=(256, 128), dropout=0.2):
        super().__init__()
        layers, width = [], n_features
        for h in hidden:
            layers += [nn.Linear(width, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(dropout)]
            width = h
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(width, n_classes)

    def forward(self, x):
        return self.out(self.body(x))
