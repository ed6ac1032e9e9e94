from .module import TextClassifier

__all__ = ["TextClassifier"]
