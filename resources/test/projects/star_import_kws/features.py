import torch
import torchaudio
from torch import nn

__all__ = ["LogMel", "SAMPLE_RATE", "N_MELS"]

SAMPLE_RATE = 16000
N_MELS = 40


class LogMel(nn.Module):
    def __init__(self, sample_rate=SAMPLE_RATE, n_mels=N_MELS):
        super().__init__()
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate, n_fft=480, hop_length=160, n_mels=n_mels)

    def forward(self, wav):
        return torch.log(self.mel(wav) + 1e-6)
