from torch import nn
from torchvision.models import MobileNet_V3_Small_Weights, mobilenet_v3_small


def build_model(num_classes, dropout=0.2):
    model = mobilenet_v3_small(weights=MobileNet_V3_Small_Weights.DEFAULT)
    in_features = model.classifier[-1].in_features
    model.classifier[-2] = nn.Dropout(dropout)
    model.classifier[-1] = nn.Linear(in_features, num_classes)
    return model
