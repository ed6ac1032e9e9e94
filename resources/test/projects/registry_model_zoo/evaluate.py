import sys

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import get_model_class


def evaluate(arch, weights):
    model_cls = get_model_class(arch)
    model = model_cls(num_classes=10)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    model.eval()
    data = datasets.CIFAR10("./data", train=False, transform=transforms.ToTensor())
    correct = 0
    for images, labels in DataLoader(data, batch_size=256):
        outputs = model(images)  # expect: eval-without-no-grad
        correct += (outputs.argmax(1) == labels).sum().item()
    return correct / len(data)


if __name__ == "__main__":
    print(evaluate(sys.argv[1], sys.argv[2]))
