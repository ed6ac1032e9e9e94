import os

from torch.utils.data import DataLoader
from torchvision import datasets, transforms

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def build_transforms(size, train):
    if train:
        return transforms.Compose([transforms.RandomResizedCrop(size, scale=(0.35, 1.0)),
                                   transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                                   transforms.Normalize(MEAN, STD)])
    return transforms.Compose([transforms.Resize(int(size * 1.14)), transforms.CenterCrop(size),
                               transforms.ToTensor(), transforms.Normalize(MEAN, STD)])


def build_loaders(cfg):
    train_set = datasets.ImageFolder(os.path.join(cfg["data_root"], "train"), build_transforms(cfg["image_size"], True))
    val_set = datasets.ImageFolder(os.path.join(cfg["data_root"], "val"), build_transforms(cfg["image_size"], False))
    train_loader = DataLoader(train_set, batch_size=cfg["batch_size"], shuffle=True, num_workers=cfg["workers"], pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=cfg["batch_size"], shuffle=True, num_workers=cfg["workers"], pin_memory=True)  # expect: eval-loader-shuffled
    return train_loader, val_loader
