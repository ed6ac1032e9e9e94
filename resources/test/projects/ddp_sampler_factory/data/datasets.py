from torchvision import datasets, transforms

MEAN, STD = (0.507, 0.487, 0.441), (0.267, 0.256, 0.276)


def cifar100(root, train):
    if train:
        tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    else:
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    return datasets.CIFAR100(root, train=train, download=False, transform=tf)
