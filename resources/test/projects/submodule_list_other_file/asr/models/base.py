import torch.nn as nn


class BaseRNN(nn.Module):
    """Shared constructor of the recurrent blocks."""

    supported = {"lstm": nn.LSTM, "gru": nn.GRU}

    def __init__(self, input_size, hidden_dim, rnn_type="lstm", bidirectional=True):
        super().__init__()
        self.rnn = self.supported[rnn_type](
            input_size, hidden_dim, batch_first=True, bidirectional=bidirectional
        )
