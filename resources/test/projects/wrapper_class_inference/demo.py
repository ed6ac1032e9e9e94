import sys

import torch
from PIL import Image
from torchvision.transforms.functional import resize, to_tensor

from detector.pipeline import Detector

CLASSES = ["plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def main(paths):
    detector = Detector("checkpoints", device="cpu")
    batch = torch.stack([to_tensor(resize(Image.open(p).convert("RGB"), [32, 32])) for p in paths])
    for path, label in zip(paths, detector.describe(batch)):
        print(f"{path}: {CLASSES[label]}")


if __name__ == "__main__":
    main(sys.argv[1:])
