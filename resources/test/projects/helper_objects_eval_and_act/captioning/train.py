import torch
import torch.nn.functional as F

from captioning.evaluate import Validator, sample_captions
from captioning.model import Decoder


class Trainer:
    def __init__(self, train_loader, val_loader, vocab):
        self.train_loader = train_loader
        self.validator = Validator(val_loader)
        self.decoder = Decoder(vocab)

    def train(self, epochs):
        decoder = self.decoder
        optimizer = torch.optim.Adam(decoder.parameters(), lr=1e-3)
        decoder.train()
        for epoch in range(epochs):
            for tokens, targets in self.train_loader:
                logits = decoder(tokens)
                loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            score = self.validator.validate(decoder)  # expect: missing-train-after-eval
            print(f"epoch {epoch}: accuracy {score:.3f}")


class FixedTrainer(Trainer):
    def train(self, epochs):
        decoder = self.decoder
        optimizer = torch.optim.Adam(decoder.parameters(), lr=1e-3)
        for epoch in range(epochs):
            decoder.train()
            for tokens, targets in self.train_loader:
                loss = F.cross_entropy(decoder(tokens).flatten(0, 1), targets.flatten())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch}: accuracy {self.validator.validate(decoder):.3f}")  # ok: train() again next epoch


class SamplingTrainer(Trainer):
    def train(self, epochs, start_tokens):
        decoder = self.decoder
        optimizer = torch.optim.Adam(decoder.parameters(), lr=1e-3)
        decoder.train()
        for epoch in range(epochs):
            for tokens, targets in self.train_loader:
                loss = F.cross_entropy(decoder(tokens).flatten(0, 1), targets.flatten())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(sample_captions(decoder, start_tokens))  # expect: missing-train-after-eval
