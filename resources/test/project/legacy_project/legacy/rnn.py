from torch.nn import Module, LSTM


class Tagger(Module):
    def __init__(self):
        super(Tagger, self).__init__()
        self.lstm = LSTM(100, 128, num_layers=2, bidirectional=True)
