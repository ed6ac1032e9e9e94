import torch.nn as nn
import torch.nn.functional as F


class ClsHead(nn.Module):
    """The v1 head returned log-probabilities (trained with NLLLoss)."""

    def __init__(self, in_features=1024, num_classes=21):
        super().__init__()
        self.fc = nn.Linear(in_features, 1024)
        self.cls_score = nn.Linear(1024, num_classes)

    def forward(self, x):
        return F.log_softmax(self.cls_score(F.relu(self.fc(x))), dim=1)
