import torch
from torch import nn


class ReviewClassifier(nn.Module):
    """Mean of token embeddings -> MLP -> probability that a review is positive."""

    def __init__(self, vocab_size, embed_dim=128, hidden=64, dropout=0.3):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.mlp = nn.Sequential(
            nn.Linear(embed_dim, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    def forward(self, tokens, offsets):
        h = self.embedding(tokens, offsets)
        return torch.sigmoid(self.mlp(h)).squeeze(1)
