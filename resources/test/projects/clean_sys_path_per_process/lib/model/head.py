import torch.nn as nn


class ClsHead(nn.Module):
    def __init__(self, in_features=1024, num_classes=21):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(in_features, 1024), nn.ReLU(inplace=True), nn.Dropout(0.5))
        self.cls_score = nn.Linear(1024, num_classes)

    def forward(self, x):
        return self.cls_score(self.fc(x))
