import torch
import torch.nn as nn

NUM_LAYERS = 2
DROPOUT = 0.3


class Encoder(nn.Module):
    def __init__(self, vocab_size, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.GRU(
            input_size=hidden,
            hidden_size=hidden,
            num_layers=NUM_LAYERS,
            batch_first=True,
            dropout=DROPOUT,
        )

    def forward(self, x):
        y, h = self.rnn(self.embed(x))
        return y, h


class Decoder(nn.Module):
    def __init__(self, vocab_size, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def forward(self, x, h):
        y, h = self.rnn(self.embed(x), h)
        return self.out(y), h


class Tagger(nn.Module):
    """One recurrent layer: PyTorch applies no dropout (it warns), train and eval agree."""

    def __init__(self, vocab_size, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.LSTM(hidden, hidden, 1, batch_first=True, dropout=0.5)
        self.out = nn.Linear(hidden, 5)

    def forward(self, x):
        y, _ = self.rnn(self.embed(x))
        return self.out(y)


class Classifier(nn.Module):
    def __init__(self, vocab_size, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.rnn = nn.LSTM(hidden, hidden, num_layers=2, dropout=0.2, batch_first=True)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x):
        y, _ = self.rnn(self.embed(x))
        return self.out(y[:, -1])
