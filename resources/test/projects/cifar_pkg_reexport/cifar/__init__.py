"""CIFAR-10 models and data for the training script."""
from .data import CIFAR_MEAN, CIFAR_STD, build_loaders
from .models import SmallCNN

__all__ = ["SmallCNN", "build_loaders", "CIFAR_MEAN", "CIFAR_STD"]
