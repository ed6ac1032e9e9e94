from torch import nn


class ConvBackbone(nn.Module):
    def __init__(self, in_channels=3, widths=(32, 64, 128)):
        super().__init__()
        layers, c = [], in_channels
        for w in widths:
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.GELU(), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.out_features = c

    def forward(self, x):
        return self.features(x)
