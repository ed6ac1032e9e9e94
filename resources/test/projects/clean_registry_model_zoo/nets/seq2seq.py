import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.drop = nn.Dropout(0.2)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True)

    def forward(self, src):
        return self.rnn(self.drop(self.embed(src)))


class Decoder(nn.Module):
    def __init__(self, vocab, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.drop = nn.Dropout(0.2)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, y, state):
        o, state = self.rnn(self.drop(self.embed(y)), state)
        return self.out(o), state


def build_seq2seq(vocab, lr=1e-3):
    encoder = Encoder(vocab)
    decoder = Decoder(vocab)
    params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = torch.optim.Adam(params, lr=lr)
    return encoder, decoder, optimizer
