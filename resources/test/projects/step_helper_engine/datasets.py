from torch.utils.data import DataLoader
from torchvision import datasets, transforms

NORM = transforms.Normalize((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))


def cifar100_loaders(root, batch_size, workers=4):
    train_tf = transforms.Compose([transforms.RandomCrop(32, 4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), NORM])
    test_tf = transforms.Compose([transforms.ToTensor(), NORM])
    train = datasets.CIFAR100(root, train=True, download=True, transform=train_tf)
    test = datasets.CIFAR100(root, train=False, download=True, transform=test_tf)
    return (
        DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True),
        DataLoader(test, batch_size=batch_size, shuffle=False, num_workers=workers, pin_memory=True),
    )
