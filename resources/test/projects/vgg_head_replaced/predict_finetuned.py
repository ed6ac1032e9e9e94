import torch

from data import test_loader
from models import get_finetuned

model = get_finetuned()
model.load_state_dict(torch.load("finetuned.pt", weights_only=True))

correct = 0
with torch.no_grad():
    for images, labels in test_loader():
        preds = model(images).argmax(1)  # expect: missing-eval-mode
        correct += (preds == labels).sum().item()
print(correct)
