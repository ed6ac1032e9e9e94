import torch.nn as nn


class LSTNet(nn.Module):
    def __init__(self, m, hidden=50):
        super().__init__()
        self.gru = nn.GRU(m, hidden, batch_first=True)
        self.dropout = nn.Dropout(0.2)
        self.linear = nn.Linear(hidden, m)

    def forward(self, x):
        _, h = self.gru(x)
        return self.linear(self.dropout(h.squeeze(0)))
