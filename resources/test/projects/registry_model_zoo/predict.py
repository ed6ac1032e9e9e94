import argparse

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import MODELS


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="resnet", choices=sorted(MODELS))
    parser.add_argument("--weights", required=True)
    args = parser.parse_args()

    model = MODELS[args.arch](num_classes=10)
    model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    data = datasets.CIFAR10("./data", train=False, transform=transforms.ToTensor())
    loader = DataLoader(data, batch_size=256)
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            preds = model(images).argmax(1)  # expect: missing-eval-mode
            correct += (preds == labels).sum().item()
    print(f"accuracy {correct / len(data):.4f}")


if __name__ == "__main__":
    main()
