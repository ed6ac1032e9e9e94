import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftDiceLoss(nn.Module):
    def __init__(self, smooth=1.0):
        super().__init__()
        self.smooth = smooth

    def forward(self, logits, target):
        probs = torch.sigmoid(logits)
        inter = (probs * target).sum(dim=(1, 2, 3))
        union = probs.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3))
        return 1 - ((2 * inter + self.smooth) / (union + self.smooth)).mean()


class BceDice(nn.Module):
    def __init__(self, bce_weight=0.5):
        super().__init__()
        self.bce_weight = bce_weight
        self.dice = SoftDiceLoss()

    def forward(self, logits, target):
        bce = F.binary_cross_entropy_with_logits(logits, target)
        return self.bce_weight * bce + (1 - self.bce_weight) * self.dice(logits, target)


class FocalLoss(nn.BCEWithLogitsLoss):
    def __init__(self, gamma=2.0):
        super().__init__(reduction="none")
        self.gamma = gamma

    def forward(self, logits, target):
        bce = super().forward(logits, target)
        p_t = torch.exp(-bce)
        return ((1 - p_t) ** self.gamma * bce).mean()
