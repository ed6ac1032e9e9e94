import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from detector.pipeline import Detector


def evaluate(detector: Detector, loader):
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            probs = detector.scores(images)
            correct += (probs.argmax(1) == labels).sum().item()
            total += labels.size(0)
    return correct / total


if __name__ == "__main__":
    test_set = datasets.CIFAR10("data", train=False, download=True, transform=transforms.ToTensor())
    loader = DataLoader(test_set, batch_size=256, num_workers=4)
    print(f"accuracy: {evaluate(Detector('checkpoints'), loader):.4f}")
