import torch
from torch.nn.utils.rnn import pad_sequence
from torchaudio.datasets import SPEECHCOMMANDS

from features import *

__all__ = ["KEYWORDS", "CommandsSubset", "make_loaders"]

KEYWORDS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go"]


class CommandsSubset(SPEECHCOMMANDS):
    def __init__(self, root, subset):
        super().__init__(root, download=True, subset=subset)
        self._walker = [w for w in self._walker if w.split("/")[-2] in KEYWORDS]

    def __getitem__(self, n):
        wav, sr, label, *_ = super().__getitem__(n)
        assert sr == SAMPLE_RATE
        return wav.squeeze(0), KEYWORDS.index(label)


def collate(batch):
    wavs, labels = zip(*batch)
    return pad_sequence(wavs, batch_first=True), torch.tensor(labels)


def make_loaders(root, batch_size=128):
    train = torch.utils.data.DataLoader(CommandsSubset(root, "training"), batch_size=batch_size, shuffle=True,
                                        collate_fn=collate, num_workers=4)
    test = torch.utils.data.DataLoader(CommandsSubset(root, "testing"), batch_size=batch_size,
                                       collate_fn=collate, num_workers=4)
    return train, test
