import torch
import torch.nn as nn
import torchvision

from .backbone import Backbone


class Probe(nn.Module):
    """A linear probe: the pretrained convolutions and their BatchNorm, frozen, and a new head."""

    def __init__(self, checkpoint="backbone.pt", channels=32, classes=10):
        super().__init__()
        pretrained = Backbone(channels)
        pretrained.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
        pretrained.eval()
        for p in pretrained.parameters():
            p.requires_grad = False
        self.conv1 = pretrained.conv1
        self.bn1 = pretrained.bn1
        self.conv2 = pretrained.conv2
        self.bn2 = pretrained.bn2
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.bn1(self.conv1(x)).relu()
        x = self.bn2(self.conv2(x)).relu()
        return self.head(x.mean((2, 3)))


class FeatureNet(nn.Module):
    """Pooled ResNet features for a FID-style score, in eval mode from the start."""

    def __init__(self):
        super().__init__()
        resnet = torchvision.models.resnet18(weights="DEFAULT")
        resnet.fc = nn.Identity()
        self.net = resnet.eval()

    def forward(self, x):
        return self.net(x)


class LiveFeatureNet(nn.Module):
    """The same features, left in training mode."""

    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet18(weights="DEFAULT")
        self.net.fc = nn.Identity()

    def forward(self, x):
        return self.net(x)
