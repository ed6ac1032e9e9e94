from .backbone import Backbone
from .probe import FeatureNet, LiveFeatureNet, Probe

__all__ = ["Backbone", "FeatureNet", "LiveFeatureNet", "Probe"]
