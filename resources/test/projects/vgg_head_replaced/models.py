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
