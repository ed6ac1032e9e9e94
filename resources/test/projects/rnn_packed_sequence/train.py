import argparse

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader

from data import PAD, UNK, TaggingDataset, collate, read_conll
from models import BiLSTMTagger


def build_vocab(sentences):
    words = {PAD: 0, UNK: 1}
    tags = {}
    for ws, ts in sentences:
        for w in ws:
            words.setdefault(w, len(words))
        for t in ts:
            tags.setdefault(t, len(tags))
    return words, tags


def run_epoch(model, loader, criterion, optimizer):
    model.train()
    total = 0.0
    for tokens, tags, lengths in loader:
        targets, _ = pack_padded_sequence(tags, lengths, batch_first=True, enforce_sorted=False)  # expect: pack-padded-sequence-unpacked
        scores = model(tokens, lengths)
        loss = criterion(scores, targets)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        total += loss.item()
    return total / len(loader)


@torch.no_grad()
def accuracy(model, loader):
    model.eval()
    correct = total = 0
    for tokens, tags, lengths in loader:
        targets = pack_padded_sequence(tags, lengths, batch_first=True, enforce_sorted=False).data  # ok
        preds = model(tokens, lengths).argmax(dim=-1)
        correct += (preds == targets).sum().item()
        total += targets.numel()
    return correct / total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--dev", required=True)
    parser.add_argument("--epochs", type=int, default=15)
    args = parser.parse_args()

    train_sents, dev_sents = read_conll(args.train), read_conll(args.dev)
    word_vocab, tag_vocab = build_vocab(train_sents)
    train_loader = DataLoader(TaggingDataset(train_sents, word_vocab, tag_vocab), batch_size=32,
                              shuffle=True, collate_fn=collate)
    dev_loader = DataLoader(TaggingDataset(dev_sents, word_vocab, tag_vocab), batch_size=64, collate_fn=collate)
    model = BiLSTMTagger(len(word_vocab), len(tag_vocab))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        loss = run_epoch(model, train_loader, criterion, optimizer)
        print(f"epoch {epoch}: loss {loss:.4f} dev acc {accuracy(model, dev_loader):.4f}")
    torch.save({"model": model.state_dict(), "words": word_vocab, "tags": tag_vocab}, "tagger.pt")


if __name__ == "__main__":
    main()
