class AverageMeter:
    """Computes and stores the average and current value."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class ScalarMeter:
    """Keeps Python numbers only."""

    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, val, n=1):
        self.total += float(val) * n
        self.count += n
