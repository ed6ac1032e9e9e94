import torch.nn as nn
from torchvision import models


def resnet_classifier(num_classes, freeze_backbone=False):
    model = models.resnet18(weights="IMAGENET1K_V1")
    if freeze_backbone:
        for param in model.parameters():
            param.requires_grad = False
    model.fc = nn.Sequential(nn.Dropout(0.2), nn.Linear(model.fc.in_features, num_classes))
    return model
