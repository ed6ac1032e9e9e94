import torch

from data import test_loader
from models import get_linear_probe

model = get_linear_probe()
model.load_state_dict(torch.load("probe.pt", weights_only=True))

correct = 0
with torch.no_grad():
    for images, labels in test_loader():
        preds = model(images).argmax(1)
        correct += (preds == labels).sum().item()
print(correct)
