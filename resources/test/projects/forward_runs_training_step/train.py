import torch

from models import *


def train_tagger(batches, vocab, tags, epochs):
    model = Tagger(vocab, tags)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in batches:
            loss = model(x, y)  # forward pass, gradients cleared inside
            loss.backward()
            optim.step()  # ok: Tagger.forward starts with self.zero_grad()


def train_plain(batches, vocab, tags, epochs):
    model = PlainTagger(vocab, tags)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in batches:
            loss = model(x, y)
            loss.backward()
            optim.step()  # expect: missing-zero-grad
