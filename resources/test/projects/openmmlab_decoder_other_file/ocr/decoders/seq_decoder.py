import torch
import torch.nn as nn

from .base import BaseDecoder


class SeqDecoder(BaseDecoder):
    def __init__(self, max_seq_len=25, num_classes=37):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.embedding = nn.Embedding(num_classes, 64)
        self.cell = nn.LSTMCell(64, 64)
        self.classifier = nn.Linear(64, num_classes)

    def forward_train(self, feat, targets):
        tgt = self.embedding(targets)
        outputs = []
        h, c = self.cell(feat)
        for i in range(-1, self.max_seq_len - 1):
            if i == -1:
                outputs.append(self.classifier(h))  # ok: teacher forcing, the outputs feed the loss
            else:
                h, c = self.cell(tgt[:, i], (h, c))
                outputs.append(self.classifier(h))
        return torch.stack(outputs, 1)

    def forward_test(self, feat):
        outputs = []
        h, c = self.cell(feat)
        for _ in range(self.max_seq_len):
            logits = self.classifier(h)  # ok: the framework's test loop runs this under no_grad
            outputs.append(logits)
            h, c = self.cell(self.embedding(logits.argmax(-1)), (h, c))
        return torch.stack(outputs, 1)
