import torch


def accuracy(output, target, topk=(1,)):
    """Precision@k for the given values of k."""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)  # ok: every caller uses k=1
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def hit_rates(scores, labels, topk=(1,)):
    """Fraction of samples whose label is among the k best scores."""
    _, pred = scores.topk(max(topk), 1, True, True)
    pred = pred.t()
    hits = pred.eq(labels.view(1, -1).expand_as(pred))
    rates = []
    for k in topk:
        rates.append(hits[:k].view(-1).float().sum().item() / labels.size(0))  # expect: view-on-non-contiguous
    return rates
