import torch.nn as nn
import torchvision.models as models


class CovidNetResNet(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.backbone = models.resnet18(pretrained=True)
        self.backbone.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.backbone(x)
