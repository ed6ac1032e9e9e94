from .backbone import ConvBackbone
from .heads import ClassificationHead

__all__ = ["ConvBackbone", "ClassificationHead"]
