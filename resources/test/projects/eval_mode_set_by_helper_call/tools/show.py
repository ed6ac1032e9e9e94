import sys

import torch

sys.path.insert(0, ".")
from vision.models import FlowerNet  # noqa: E402
from vision.plots import show_samples  # noqa: E402

CLASSES = ["daisy", "dandelion", "rose", "sunflower", "tulip"]

model = FlowerNet(num_classes=len(CLASSES))
model.load_state_dict(torch.load("flowers.pth", map_location="cpu", weights_only=True))
batch = torch.load("samples.pt", weights_only=True)
show_samples(model, batch, CLASSES)
