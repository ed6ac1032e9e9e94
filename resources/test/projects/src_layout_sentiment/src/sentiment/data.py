import csv
from collections import Counter

import torch
from torch.utils.data import Dataset


def tokenize(text):
    return text.lower().replace("<br />", " ").split()


class Vocab:
    def __init__(self, texts, min_freq=2, specials=("<unk>",)):
        counts = Counter(tok for t in texts for tok in tokenize(t))
        self.itos = list(specials) + sorted(w for w, c in counts.items() if c >= min_freq)
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def encode(self, text):
        return [self.stoi.get(tok, 0) for tok in tokenize(text)]


class ReviewDataset(Dataset):
    def __init__(self, path):
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        self.texts = [r["review"] for r in rows]
        self.labels = [float(r["sentiment"] == "positive") for r in rows]

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, idx):
        return self.texts[idx], self.labels[idx]


def make_collate(vocab):
    def collate(batch):
        ids, offsets, labels = [], [0], []
        for text, label in batch:
            encoded = torch.tensor(vocab.encode(text) or [0], dtype=torch.long)
            ids.append(encoded)
            offsets.append(encoded.numel())
            labels.append(label)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        return torch.cat(ids), offsets, torch.tensor(labels)

    return collate
