import torch


def confidence_penalty(log_probs):
    """Negative entropy of the predictions, averaged over the batch."""
    return torch.mean(torch.sum(log_probs.exp() * log_probs, dim=1))


def per_class_penalty(log_probs):
    return torch.sum(log_probs.exp() * log_probs, dim=0)
