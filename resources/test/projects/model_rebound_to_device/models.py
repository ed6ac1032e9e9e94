import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    """Returns class probabilities (the softmax is part of the model)."""

    def __init__(self, in_dim=32, classes=10):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, 64)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(64, classes)

    def forward(self, x):
        return F.softmax(self.fc2(self.drop(F.relu(self.fc1(x)))), dim=1)


class LogitHead(nn.Module):
    """Returns logits."""

    def __init__(self, in_dim=32, classes=10):
        super().__init__()
        self.fc = nn.Linear(in_dim, classes)

    def forward(self, x):
        return self.fc(x)
