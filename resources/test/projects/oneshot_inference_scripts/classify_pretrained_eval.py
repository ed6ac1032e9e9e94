import sys

import torch
from PIL import Image
from torchvision import models, transforms

tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
resnet = models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V2).eval()
image = tf(Image.open(sys.argv[1]).convert("RGB")).unsqueeze(0)
with torch.no_grad():
    scores = resnet(image)
print(scores.argmax(1).item())
