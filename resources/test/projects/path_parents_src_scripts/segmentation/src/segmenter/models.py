import torch.nn as nn


def block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class SegNet(nn.Module):
    def __init__(self, num_classes=19, width=32):
        super().__init__()
        self.encoder = nn.Sequential(block(3, width), nn.MaxPool2d(2), block(width, 2 * width), nn.MaxPool2d(2))
        self.decoder = nn.Sequential(
            nn.Upsample(scale_factor=4, mode="bilinear", align_corners=False),
            block(2 * width, width),
            nn.Dropout2d(0.1),
        )
        self.classifier = nn.Conv2d(width, num_classes, 1)

    def forward(self, x):
        return self.classifier(self.decoder(self.encoder(x)))
