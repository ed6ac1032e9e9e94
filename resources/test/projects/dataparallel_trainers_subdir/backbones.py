import torch.nn as nn
import torch.utils.model_zoo as model_zoo

WEIGHTS = "https://example.invalid/weights/tiny-backbone.pth"


class Backbone(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def backbone(pretrained=True):
    model = Backbone()
    if pretrained:
        # ok: the model's own dict, filled from downloaded weights (not a saved checkpoint)
        own = model.state_dict()
        downloaded = model_zoo.load_url(WEIGHTS)
        own.update({k: downloaded[k] for k in downloaded if not k.startswith("head")})
        model.load_state_dict(own)
    return model


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
