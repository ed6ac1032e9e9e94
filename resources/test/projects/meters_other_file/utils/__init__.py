from .meters import AverageMeter, ScalarMeter
