import torch
import torchvision.models as models
from torch import nn


class MLPHead(nn.Module):
    def __init__(self, in_channels, mlp_hidden_size, projection_size):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_channels, mlp_hidden_size),
            nn.BatchNorm1d(mlp_hidden_size),
            nn.ReLU(inplace=True),
            nn.Linear(mlp_hidden_size, projection_size),
        )

    def forward(self, x):
        return self.net(x)


class ResNet18(torch.nn.Module):
    def __init__(self, name, hidden, projection):
        super().__init__()
        if name == "resnet18":
            resnet = models.resnet18(pretrained=False)  # ok: torchvision 0.5 (env.yml) has no weights=
        else:
            resnet = models.resnet50(pretrained=False)  # ok
        self.encoder = torch.nn.Sequential(*list(resnet.children())[:-1])
        self.projection = MLPHead(resnet.fc.in_features, hidden, projection)

    def forward(self, x):
        h = self.encoder(x)
        return self.projection(h.view(h.shape[0], -1))
