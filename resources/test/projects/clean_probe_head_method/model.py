import torch
from torch import nn


class ProbeClassifier(nn.Module):
    """A linear probe on a frozen pretrained encoder; only the head trains."""

    def __init__(self, encoder, hidden, n_classes, dropout=0.1):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(hidden, n_classes))

    def start_head_training(self):
        # The encoder keeps its eval-mode normalisation statistics; only the head trains.
        self.encoder.eval()
        for p in self.encoder.parameters():
            p.requires_grad = False
        self.head.train()

    def forward(self, x):
        with torch.no_grad():
            feats = self.encoder(x).mean(dim=1)
        return self.head(feats)
