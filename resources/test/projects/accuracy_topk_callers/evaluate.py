import argparse

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.models import resnet18

from reid.metrics import accuracy, hit_rates


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    top1 = top5 = 0.0
    for images, labels in loader:
        scores = model(images)
        r1, r5 = hit_rates(scores, labels, topk=(1, 5))
        (prec,) = accuracy(scores, labels, topk=(1,))
        top1 += r1
        top5 += r5
    return top1 / len(loader), top5 / len(loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    args = parser.parse_args()
    val = datasets.CIFAR10(args.data, train=False, download=True, transform=transforms.ToTensor())
    loader = DataLoader(val, batch_size=256, shuffle=False)
    model = resnet18(weights=None, num_classes=10)
    print(evaluate(model, loader))


if __name__ == "__main__":
    main()
