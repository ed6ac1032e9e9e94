import torchvision
import torchvision.transforms as transforms
from torch.utils.data import DataLoader

CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def cifar_loaders(root="./data", batch_size=32):
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])
    train = torchvision.datasets.CIFAR10(root=root, train=True, download=True, transform=tf)
    test = torchvision.datasets.CIFAR10(root=root, train=False, download=True, transform=tf)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=2),
            DataLoader(test, batch_size=256, shuffle=False, num_workers=2))
