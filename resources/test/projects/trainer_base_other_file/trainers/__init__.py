from .base import BaseTrainer
from .classifier import ClassifierTrainer

__all__ = ["BaseTrainer", "ClassifierTrainer"]
