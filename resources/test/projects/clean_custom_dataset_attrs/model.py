import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class GRUActivityNet(nn.Module):
    def __init__(self, n_channels=3, hidden=96, n_classes=6, dropout=0.2):
        super().__init__()
        self.gru = nn.GRU(n_channels, hidden, num_layers=2, batch_first=True, dropout=dropout, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)  # ok: one value
        out, _ = self.gru(packed)
        out, out_lengths = pad_packed_sequence(out, batch_first=True)  # ok: pad_packed_sequence returns two values
        mask = torch.arange(out.size(1), device=out.device)[None, :] < out_lengths.to(out.device)[:, None]
        pooled = (out * mask.unsqueeze(-1)).sum(1) / out_lengths.to(out.device).unsqueeze(1)
        return self.fc(pooled)
