from .features import FeatureNet, ProbeNet
