import torch.nn as nn
from torchvision import models


class ResNetBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        resnet = models.resnet50(pretrained=True)  # ok: torchvision 0.8 has no weights=
        self.features = nn.Sequential(*list(resnet.children())[:-1])
        self.feature_dim = resnet.fc.in_features

    def forward(self, x):
        return self.features(x).flatten(1)


class AlexNetBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        alexnet = models.alexnet(pretrained=True)  # ok
        self.features = alexnet.features
        self.pool = alexnet.avgpool
        self.feature_dim = alexnet.classifier[6].in_features

    def forward(self, x):
        return self.pool(self.features(x)).flatten(1)
