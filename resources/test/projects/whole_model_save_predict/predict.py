"""python predict.py image1.jpg [image2.jpg ...]"""
import sys

import torch
from PIL import Image
from torchvision import transforms

import config

TF = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(config.IMAGE_SIZE),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])


def main(paths):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.load(config.MODEL_PATH, map_location=device)  # expect: checkpoint-fails-weights-only-load
    model.eval()
    batch = torch.stack([TF(Image.open(p).convert("RGB")) for p in paths]).to(device)
    with torch.inference_mode():
        probs = model(batch).softmax(dim=1)
    for path, p in zip(paths, probs):
        conf, idx = p.max(dim=0)
        print(f"{path}: {model.class_names[idx]} ({conf:.1%})")


if __name__ == "__main__":
    main(sys.argv[1:])
