import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset

PAD = "<pad>"
UNK = "<unk>"


def read_conll(path):
    sentences, words, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                if words:
                    sentences.append((words, tags))
                words, tags = [], []
                continue
            cols = line.split()
            words.append(cols[0].lower())
            tags.append(cols[-1])
    if words:
        sentences.append((words, tags))
    return sentences


class TaggingDataset(Dataset):
    def __init__(self, sentences, word_vocab, tag_vocab):
        self.items = [
            (torch.tensor([word_vocab.get(w, 1) for w in ws]), torch.tensor([tag_vocab[t] for t in ts]))
            for ws, ts in sentences
        ]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    words, tags = zip(*batch)
    lengths = torch.tensor([len(w) for w in words])
    return pad_sequence(words, batch_first=True), pad_sequence(tags, batch_first=True), lengths
