from torch.utils.data import DataLoader
from torchvision import datasets, transforms

CLASSES = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"]


def get_loaders(root="data", batch_size=64):
    tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])
    train_set = datasets.FashionMNIST(root, train=True, download=True, transform=tfm)
    test_set = datasets.FashionMNIST(root, train=False, download=True, transform=tfm)
    return (DataLoader(train_set, batch_size=batch_size, shuffle=True, num_workers=2),
            DataLoader(test_set, batch_size=256, shuffle=False, num_workers=2))
