from torch import nn

CFG = [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, "M"]


class VGGLite(nn.Module):
    def __init__(self, num_classes=10, cfg=CFG):
        super().__init__()
        layers, c = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1, bias=False), nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(c * 2 * 2, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))
