import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, vocab, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.drop = nn.Dropout(0.3)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)

    def forward(self, src):
        return self.rnn(self.drop(self.embed(src)))


class Decoder(nn.Module):
    def __init__(self, vocab, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.drop = nn.Dropout(0.3)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, y, h):
        o, h = self.rnn(self.drop(self.embed(y)), h)
        return self.out(o), h


def load_model(path, src_vocab, tgt_vocab):
    encoder = Encoder(src_vocab)
    decoder = Decoder(tgt_vocab)
    state = torch.load(path, map_location="cpu", weights_only=True)
    encoder.load_state_dict(state["encoder"])
    decoder.load_state_dict(state["decoder"])
    return encoder, decoder
