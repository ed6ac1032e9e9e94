import sys

import torch
from PIL import Image
from torchvision import transforms

from model import SmallCNN

CLASSES = ["cat", "dog"]

model = SmallCNN()
model.load_state_dict(torch.load("cnn.pt", map_location="cpu", weights_only=True))
model.eval()

tf = transforms.Compose([transforms.Resize((64, 64)), transforms.ToTensor()])
image = tf(Image.open(sys.argv[1]).convert("RGB")).unsqueeze(0)
pred = model(image).argmax(1).item()  # expect: eval-without-no-grad
print(CLASSES[pred])
