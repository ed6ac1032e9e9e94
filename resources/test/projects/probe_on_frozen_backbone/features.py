"""Feature statistics of the validation images for a FID-style comparison."""
import torch

from data import loaders
from models import FeatureNet, LiveFeatureNet

_, val_loader = loaders()
held = FeatureNet()
live = LiveFeatureNet()

with torch.no_grad():
    held_feats = torch.cat([held(images) for images, _ in val_loader])
    live_feats = torch.cat([live(images) for images, _ in val_loader])  # expect: missing-eval-mode
print(held_feats.mean(0), live_feats.mean(0))
