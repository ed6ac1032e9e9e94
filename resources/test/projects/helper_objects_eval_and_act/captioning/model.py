import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, vocab, hidden=256, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True)
        self.dropout = nn.Dropout(p=dropout)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.out(self.dropout(h))

    def greedy_decoding(self, start, steps=20):
        self.eval()
        tokens = start
        with torch.no_grad():
            for _ in range(steps):
                nxt = self.forward(tokens)[:, -1:].argmax(-1)
                tokens = torch.cat([tokens, nxt], dim=1)
        return tokens
