import torch.nn as nn


class EmbeddingNet(nn.Module):
    def __init__(self, num_ids, dim=256):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.neck = nn.Linear(32, dim)
        self.drop = nn.Dropout(0.2)
        self.classifier = nn.Linear(dim, num_ids)

    def forward(self, images):
        feats = self.neck(self.backbone(images))
        if self.training:
            return self.classifier(self.drop(feats))
        return feats
