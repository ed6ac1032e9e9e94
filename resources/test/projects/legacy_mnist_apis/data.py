from torchvision import datasets, transforms


def get_mnist(root, train):
    tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    return datasets.MNIST(root, train=train, download=True, transform=tfm)
