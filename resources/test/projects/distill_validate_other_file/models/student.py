from torch import nn


class StudentNet(nn.Module):
    def __init__(self, num_classes=100, width=48, dropout=0.2):
        super().__init__()

        def stage(c_in, c_out):
            return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out),
                                 nn.ReLU(inplace=True), nn.MaxPool2d(2))

        self.features = nn.Sequential(stage(3, width), stage(width, 2 * width), stage(2 * width, 4 * width))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * width, num_classes))

    def forward(self, x):
        return self.classifier(self.pool(self.features(x)).flatten(1))
