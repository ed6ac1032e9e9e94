import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from detector.pipeline import Detector


@torch.no_grad()
def collect(det, loader):
    out = []
    for images, _ in loader:
        out.append(det.logits(images).numpy())
    return np.concatenate(out)


def main():
    train_set = datasets.CIFAR10("data", train=True, download=True, transform=transforms.ToTensor())
    feats = collect(Detector("checkpoints"), DataLoader(train_set, batch_size=512))
    np.save("logits.npy", feats)


if __name__ == "__main__":
    main()
