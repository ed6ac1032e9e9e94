from torch import nn
from torchvision.models import ResNet18_Weights, resnet18


class FineTuneNet(nn.Module):
    """Pretrained backbone plus a fresh head; the two are optimised separately."""

    def __init__(self, num_classes, dropout=0.3):
        super().__init__()
        self.backbone = resnet18(weights=ResNet18_Weights.IMAGENET1K_V1)
        in_features = self.backbone.fc.in_features
        self.backbone.fc = nn.Identity()
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(in_features, num_classes))

    def forward(self, x):
        return self.head(self.backbone(x))
