import torch
from torch import nn


def conv_bn(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10, width=64, dropout=0.25):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(3, width),
            conv_bn(width, width),
            nn.MaxPool2d(2),
            conv_bn(width, 2 * width),
            conv_bn(2 * width, 2 * width),
            nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(1),
        )
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = self.body(x).flatten(1)
        x = self.classifier(self.dropout(x))
        # class probabilities, so callers can read confidences directly
        return torch.softmax(x, dim=-1)
