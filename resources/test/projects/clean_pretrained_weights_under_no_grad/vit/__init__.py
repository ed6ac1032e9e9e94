from .backbone import Bottleneck, ResNetStem
from .transformer import HybridViT

__all__ = ["Bottleneck", "ResNetStem", "HybridViT"]
