from .engine import evaluate, train_one_epoch
from .model import WideNet

__all__ = ["WideNet", "evaluate", "train_one_epoch"]
