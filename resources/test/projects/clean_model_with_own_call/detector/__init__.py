from .model import Detector

__all__ = ["Detector"]
