import torch
from torch import nn


class CharRNN(nn.Module):
    def __init__(self, chars, n_hidden=256, n_layers=2, drop_prob=0.5):
        super().__init__()
        self.chars = chars
        self.char2int = {ch: i for i, ch in enumerate(chars)}
        self.lstm = nn.LSTM(len(chars), n_hidden, n_layers, dropout=drop_prob, batch_first=True)
        self.dropout = nn.Dropout(drop_prob)
        self.fc = nn.Linear(n_hidden, len(chars))

    def forward(self, x, hidden):
        out, hidden = self.lstm(x, hidden)
        out = self.dropout(out).contiguous().view(-1, self.fc.in_features)
        return self.fc(out), hidden
