from torch import nn


class LSTMForecaster(nn.Module):
    def __init__(self, n_features, hidden=64, layers=2, horizon=24, dropout=0.1):
        super().__init__()
        self.lstm = nn.LSTM(n_features, hidden, num_layers=layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])
