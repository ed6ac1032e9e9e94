import torch


def confusion(pred, target, num_classes, ignore_index=255):
    keep = target != ignore_index
    idx = target[keep] * num_classes + pred[keep]
    return torch.bincount(idx, minlength=num_classes ** 2).reshape(num_classes, num_classes)


def mean_iou(conf):
    inter = conf.diag().float()
    union = conf.sum(0).float() + conf.sum(1).float() - inter
    return (inter / union.clamp(min=1)).mean().item()
