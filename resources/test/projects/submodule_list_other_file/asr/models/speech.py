import torch.nn as nn

from asr.models.blocks import BNReluRNN, Vocabulary, build_block


class SpeechModel(nn.Module):
    def __init__(self, input_size, hidden, num_layers, num_classes):
        super().__init__()
        self.rnn_layers = list()  # expect: submodules-in-python-list
        for idx in range(num_layers):
            self.rnn_layers.append(
                BNReluRNN(input_size if idx == 0 else 2 * hidden, hidden, rnn_type="gru")
            )
        self.heads = []  # expect: submodules-in-python-list
        for _ in range(2):
            self.heads.append(build_block(2 * hidden, num_classes))
        self.fc = nn.Linear(2 * hidden, num_classes)

    def forward(self, x):
        for layer in self.rnn_layers:
            x = layer(x)
        return self.fc(x)


class Tagger(nn.Module):
    def __init__(self, input_size, hidden, num_layers, tokens):
        super().__init__()
        self.rnn_layers = nn.ModuleList()  # ok
        for idx in range(num_layers):
            self.rnn_layers.append(BNReluRNN(input_size if idx == 0 else 2 * hidden, hidden))
        self.vocabularies = list()  # ok: plain objects, not modules
        for group in tokens:
            self.vocabularies.append(Vocabulary(group))
        self.fc = nn.Linear(2 * hidden, len(tokens))

    def forward(self, x):
        for layer in self.rnn_layers:
            x = layer(x)
        return self.fc(x)
