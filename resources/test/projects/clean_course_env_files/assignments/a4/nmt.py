"""Character-aware NMT (assignment 4). Usage: python nmt.py train|decode MODEL_PATH"""
import sys

import torch
import torch.nn as nn


class Vocab:
    def __init__(self, words):
        self.word2id = {w: i for i, w in enumerate(words)}

    def __len__(self):
        return len(self.word2id)


class NMT(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab, dropout_rate=0.2):
        super().__init__()
        self.embed_size = embed_size
        self.hidden_size = hidden_size
        self.dropout_rate = dropout_rate
        self.vocab = vocab
        self.embed = nn.Embedding(len(vocab), embed_size)
        self.encoder = nn.LSTM(embed_size, hidden_size, bidirectional=True)
        self.out = nn.Linear(2 * hidden_size, len(vocab))

    def forward(self, src):
        h, _ = self.encoder(self.embed(src))
        return self.out(h)

    @staticmethod
    def load(model_path):
        # ok: the checkpoint holds the Vocab object, but gpu_env.yml pins python=3.5 (torch 1.5 at most),
        # whose torch.load has no weights-only default
        params = torch.load(model_path, map_location=lambda storage, loc: storage)
        model = NMT(vocab=params["vocab"], **params["args"])
        model.load_state_dict(params["state_dict"])
        return model

    def save(self, path):
        params = {
            "args": dict(embed_size=self.embed_size, hidden_size=self.hidden_size, dropout_rate=self.dropout_rate),
            "vocab": self.vocab,
            "state_dict": self.state_dict(),
        }
        torch.save(params, path)


def train(model_path):
    model = NMT(32, 64, Vocab(["<pad>", "<s>", "</s>", "a", "b"]))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = torch.randint(0, 5, (7, 4))
    for _ in range(10):
        optimizer.zero_grad()
        loss = model(src).logsumexp(-1).mean()
        loss.backward()
        optimizer.step()
    model.save(model_path)


def decode(model_path):
    model = NMT.load(model_path)
    model.eval()
    with torch.no_grad():
        print(model(torch.randint(0, 5, (7, 1))).argmax(-1))


if __name__ == "__main__":
    {"train": train, "decode": decode}[sys.argv[1]](sys.argv[2])
