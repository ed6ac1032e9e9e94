import torch
import torch.nn as nn
import torch.nn.functional as F


class WeightedFocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2.0):
        super().__init__()
        self.alpha = alpha
        self.gamma = gamma

    def forward(self, inputs, targets):
        bce = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")  # expect: bce-with-logits-on-probabilities
        pt = torch.exp(-bce)
        return (self.alpha * (1 - pt) ** self.gamma * bce).mean()


class SoftDiceLoss(nn.Module):
    def forward(self, probs, targets, eps=1.0):
        inter = (probs * targets).sum()
        return 1 - (2 * inter + eps) / (probs.sum() + targets.sum() + eps)


class LogitFocalLoss(nn.Module):
    def forward(self, logits, targets):
        bce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
        return ((1 - torch.exp(-bce)) ** 2 * bce).mean()
