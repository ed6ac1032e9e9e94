import torch
from torch import nn


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, num_classes, d_model=256, nhead=4, layers=4, max_len=512, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, tokens):
        pad = tokens.eq(0)
        x = self.embed(tokens) + self.pos[:, : tokens.size(1)]
        x = self.encoder(x, src_key_padding_mask=pad)
        x = self.norm(x).masked_fill(pad.unsqueeze(-1), 0.0).sum(1) / (~pad).sum(1, keepdim=True).clamp(min=1)
        return self.fc(x)
