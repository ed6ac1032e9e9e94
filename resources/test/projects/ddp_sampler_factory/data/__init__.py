from .datasets import cifar100
from .loaders import build_train_loader, build_val_loader

__all__ = ["cifar100", "build_train_loader", "build_val_loader"]
