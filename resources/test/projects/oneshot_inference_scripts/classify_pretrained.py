import sys

import torch
from PIL import Image
from torchvision import models, transforms

tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
vgg = models.vgg16(weights="IMAGENET1K_V1")
if torch.cuda.is_available():
    vgg = vgg.cuda()
image = tf(Image.open(sys.argv[1]).convert("RGB")).unsqueeze(0)
scores = vgg.forward(image.to(next(vgg.parameters()).device))  # expect: missing-eval-mode, call-forward-directly
print(scores.argmax(1).item())
