import numpy as np
import torch
from torch.utils.data import Dataset


class SensorSequences(Dataset):
    """Variable-length accelerometer recordings stored as one .npz per split.

    Keeps the old attribute names used by our analysis notebooks (train_data / train_labels).
    """

    def __init__(self, path, train=True):
        arrays = np.load(path, allow_pickle=False)
        prefix = "train" if train else "test"
        lengths = arrays[f"{prefix}_lengths"]
        flat = arrays[f"{prefix}_values"]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        self.train = train
        self.train_data = [torch.from_numpy(flat[a:b]).float() for a, b in zip(offsets[:-1], offsets[1:])]
        self.train_labels = torch.from_numpy(arrays[f"{prefix}_labels"]).long()

    def __len__(self):
        return len(self.train_data)

    def __getitem__(self, i):
        return self.train_data[i], self.train_labels[i]


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    return torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True), lengths, torch.stack(labels)
