"""Classify one image with the trained AlexNet."""
import sys

import torch
from PIL import Image
from torchvision import transforms

from tools import config


def to_tensor(path):
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
    return tf(Image.open(path).convert("RGB")).unsqueeze(0).to(config.device)


if __name__ == "__main__":
    model = config.load_model(config.path_state_dict, vis_model=True)
    print("model: ", model)
    img = to_tensor(sys.argv[1])
    with torch.no_grad():
        probs = torch.softmax(model(img)[0], dim=0)  # ok: load_model returns it in eval mode
    print(probs.argmax().item())
