import torch
from torch import nn


class AttentionMIL(nn.Module):
    """Attention pooling over the patches of one slide."""

    def __init__(self, dim=1024, n_classes=2, dropout=True):
        super().__init__()
        layers = [nn.Linear(dim, 256), nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(0.25))
        self.encoder = nn.Sequential(*layers)
        self.attention = nn.Linear(256, 1)
        self.classifier = nn.Linear(256, n_classes)

    def forward(self, bag):
        h = self.encoder(bag)
        a = torch.softmax(self.attention(h), dim=0)
        pooled = (a * h).sum(dim=0, keepdim=True)
        return self.classifier(pooled), a


class MeanMIL(AttentionMIL):
    def forward(self, bag):
        h = self.encoder(bag)
        return self.classifier(h.mean(dim=0, keepdim=True)), None
