import torch
import torch.nn.functional as F
from torch import nn


class Captioner(nn.Module):
    """A GRU caption decoder over precomputed image features."""

    def __init__(self, vocab_size, feat_dim=512, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.init_h = nn.Linear(feat_dim, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, feats, tokens):
        h = torch.tanh(self.init_h(feats))
        steps = []
        for t in range(tokens.size(1)):
            h = self.cell(self.embed(tokens[:, t]), h)
            steps.append(self.head(h))
        return torch.stack(steps, 1)

    def greedy(self, feats, bos, max_len=16):
        h = torch.tanh(self.init_h(feats))
        tok = bos
        out = []
        for _ in range(max_len):
            h = self.cell(self.embed(tok), h)
            tok = self.head(h).argmax(-1)
            out.append(tok)
        return torch.stack(out, 1)

    def sample(self, feats, bos, max_len=16):
        h = torch.tanh(self.init_h(feats))
        tok = bos
        logits, tokens = [], []
        for _ in range(max_len):
            h = self.cell(self.embed(tok), h)
            step = self.head(h)
            tok = torch.multinomial(F.softmax(step, dim=-1), 1).squeeze(1)
            logits.append(step)
            tokens.append(tok)
        return torch.stack(logits, 1), torch.stack(tokens, 1)
