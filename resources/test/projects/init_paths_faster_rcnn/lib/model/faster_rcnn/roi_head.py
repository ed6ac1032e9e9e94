import torch
import torch.nn as nn
import torch.nn.functional as F

from model.utils.config import cfg


class RoIHead(nn.Module):
    """Classification head on pooled region features."""

    def __init__(self, in_channels=512, num_classes=cfg.NUM_CLASSES):
        super().__init__()
        size = in_channels * cfg.POOLING_SIZE * cfg.POOLING_SIZE
        self.fc6 = nn.Linear(size, 1024)
        self.fc7 = nn.Linear(1024, 1024)
        self.drop = nn.Dropout(0.5)
        self.cls_score = nn.Linear(1024, num_classes)
        self.bbox_pred = nn.Linear(1024, num_classes * 4)

    def forward(self, pooled):
        x = torch.flatten(pooled, 1)
        x = self.drop(F.relu(self.fc6(x)))
        x = self.drop(F.relu(self.fc7(x)))
        cls_prob = F.softmax(self.cls_score(x), 1)
        return cls_prob
