import torch.nn.functional as F


def classification_loss(log_probs, target, weight=None):
    return F.nll_loss(log_probs, target, weight=weight)
