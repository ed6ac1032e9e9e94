import torch
from torch import nn


class Seq2Seq(nn.Module):
    def __init__(self, vocab, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, dropout=0.2, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src):
        h, _ = self.rnn(self.embed(src))
        return self.out(h)

    @torch.no_grad()
    def generate(self, src, max_len=50):
        tokens = src
        for _ in range(max_len):
            logits = self(tokens)
            nxt = logits[:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, nxt], dim=1)
        return tokens


class LanguageModel(nn.Module):
    def __init__(self, vocab, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.head(self.embed(x))

    def generate(self, prompt, steps=20):
        out = prompt
        for _ in range(steps):
            out = torch.cat([out, self(out)[:, -1:].argmax(-1)], dim=1)
        return out
