import torch

from data import test_loader
from models import VGGFeatures, VGGLastLayer

features_model = VGGFeatures()
features_model.load_state_dict(torch.load("features.pt", weights_only=True))
last_layer_model = VGGLastLayer()
last_layer_model.load_state_dict(torch.load("last_layer.pt", weights_only=True))

agree = 0
with torch.no_grad():
    for images, _ in test_loader():
        a = features_model(images).argmax(1)
        b = last_layer_model(images).argmax(1)  # expect: missing-eval-mode
        agree += (a == b).sum().item()
print(agree)
