from .model import LiteSegNet
from .optim import AmpStepper

__all__ = ["LiteSegNet", "AmpStepper"]
