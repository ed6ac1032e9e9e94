import torch.nn as nn
import torch.nn.functional as F

from .base import BaseRNN


class BNReluRNN(BaseRNN):
    def __init__(self, input_size, hidden_dim, rnn_type="gru"):
        super().__init__(input_size, hidden_dim, rnn_type)
        self.norm = nn.BatchNorm1d(input_size)

    def forward(self, x):
        x = F.relu(self.norm(x.transpose(1, 2))).transpose(1, 2)
        return self.rnn(x)[0]


def build_block(input_size, hidden_dim):
    return BNReluRNN(input_size, hidden_dim)


class Vocabulary:
    """Not a module: a token table."""

    def __init__(self, tokens):
        self.tokens = list(tokens)
