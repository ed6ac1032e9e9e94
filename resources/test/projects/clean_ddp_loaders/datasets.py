import os

from torchvision import datasets, transforms

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def imagenet_split(root, split):
    if split == "train":
        tf = transforms.Compose([transforms.RandomResizedCrop(176), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    else:
        tf = transforms.Compose([transforms.Resize(232), transforms.CenterCrop(224), transforms.ToTensor(),
                                 transforms.Normalize(MEAN, STD)])
    return datasets.ImageFolder(os.path.join(root, split), tf)
