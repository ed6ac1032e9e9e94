from torch import nn


class ClassificationHead(nn.Module):
    def __init__(self, in_features, num_classes, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x):
        return self.fc(self.drop(x)).softmax(dim=-1)
