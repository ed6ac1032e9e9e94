from torch import nn


class MLP(nn.Module):
    def __init__(self, in_dim, hidden_dim, out_dim, depth=3, dropout=0.1):
        super().__init__()
        layers = []
        for i in range(depth):
            layers += [nn.Linear(in_dim if i == 0 else hidden_dim, hidden_dim), nn.GELU(), nn.Dropout(dropout)]
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(hidden_dim, out_dim)

    def forward(self, x):
        return self.out(self.body(x))
