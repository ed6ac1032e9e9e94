import os

from torch.utils.data import DataLoader
from torchvision import datasets, transforms

NORMALIZE = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


def train_loader(root, batch_size, workers):
    tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(), NORMALIZE])
    ds = datasets.ImageFolder(os.path.join(root, "train"), tf)
    return DataLoader(ds, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True)


def val_loader(root, batch_size, workers):
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), NORMALIZE])
    ds = datasets.ImageFolder(os.path.join(root, "val"), tf)
    return DataLoader(ds, batch_size=batch_size, shuffle=False, num_workers=workers, pin_memory=True)
