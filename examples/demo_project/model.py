"""A small image classifier with the mistakes reviewers see every week."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, in_features=784, hidden=128, classes=10, depth=3):
        super().__init__()
        # Sub-modules in a plain list are not registered: not trained, not moved, not saved.
        self.blocks = [nn.Linear(hidden, hidden) for _ in range(depth)]
        self.stem = nn.Linear(in_features, hidden)
        self.head = nn.Linear(hidden, classes)
        # A constant tensor as a plain attribute is not moved by model.to(device).
        self.scale = torch.ones(hidden)
        self.bn = nn.BatchNorm1d(hidden, 0.99)

    def forward(self, x):
        x = F.relu(self.stem(x)) * self.scale
        for block in self.blocks:
            # Functional dropout without training=self.training stays on after eval().
            x = F.dropout(F.relu(block(x)), p=0.2)
        return F.softmax(self.head(x))


class Encoder(nn.Module):
    def __init__(self):
        self.proj = nn.Linear(16, 16)  # assigned before super().__init__()
        super().__init__()

    def forward(self, x):
        return self.proj(x).view(-1)
