import torch
from torchvision import datasets, models, transforms

NORM = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def build_model(num_classes):
    return models.resnet18(weights=None, num_classes=num_classes)


def image_folder(path, train):
    if train:
        tf = transforms.Compose([transforms.RandomResizedCrop(128), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), NORM])
    else:
        tf = transforms.Compose([transforms.Resize(146), transforms.CenterCrop(128), transforms.ToTensor(), NORM])
    return datasets.ImageFolder(path, tf)


@torch.no_grad()
def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x.to(device)).argmax(1).cpu() == y).sum().item()
        total += y.numel()
    return correct / total
