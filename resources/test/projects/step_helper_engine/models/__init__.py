from .resnet import resnet_tiny

__all__ = ["resnet_tiny"]
