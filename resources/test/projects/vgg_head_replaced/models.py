import torch.nn as nn
from torchvision import models


def get_linear_probe(num_classes=2):
    # Pretrained VGG16 with its whole classifier (the only part with Dropout) replaced.
    model = models.vgg16(weights=models.VGG16_Weights.DEFAULT)
    for param in model.parameters():
        param.requires_grad = False
    n_features = model.classifier[0].in_features
    model.classifier = nn.Linear(n_features, num_classes)
    return model


def get_finetuned(num_classes=2):
    # Only the last layer replaced: the classifier keeps its two Dropout layers.
    model = models.vgg16(weights=models.VGG16_Weights.DEFAULT)
    model.classifier[6] = nn.Linear(4096, num_classes)
    return model


class VGGFeatures(nn.Module):
    # A pretrained VGG16 whose classifier is emptied, under a head without Dropout.
    def __init__(self, num_classes=2):
        super().__init__()
        net = models.vgg16(weights=models.VGG16_Weights.DEFAULT)
        net.classifier = nn.Sequential()
        self.features = net
        self.head = nn.Sequential(
            nn.Linear(25088, 256),
            nn.ReLU(),
            nn.Linear(256, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        return self.head(x.view(x.size(0), -1))


class VGGLastLayer(nn.Module):
    # Only the last layer of the classifier replaced: its Dropout layers stay.
    def __init__(self, num_classes=2):
        super().__init__()
        net = models.vgg16(weights=models.VGG16_Weights.DEFAULT)
        net.classifier[6] = nn.Linear(4096, num_classes)
        self.net = net

    def forward(self, x):
        return self.net(x)
