import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import MLP, CNNCifar, CNNMnist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="mlp")
    parser.add_argument("--dataset", default="mnist")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    if args.dataset == "mnist":
        dataset_train = datasets.MNIST("./data/mnist", train=True, download=True, transform=transforms.ToTensor())
    else:
        dataset_train = datasets.CIFAR10("./data/cifar", train=True, download=True, transform=transforms.ToTensor())

    if args.model == "cnn" and args.dataset == "cifar":
        net_glob = CNNCifar(num_classes=10).to(device)
    elif args.model == "cnn" and args.dataset == "mnist":
        net_glob = CNNMnist(num_classes=10).to(device)
    elif args.model == "mlp":
        net_glob = MLP(dim_in=784, dim_hidden=64, dim_out=10).to(device)
    else:
        exit("Error: unrecognized model")

    optimizer = torch.optim.SGD(net_glob.parameters(), lr=0.01, momentum=0.5)
    train_loader = DataLoader(dataset_train, batch_size=64, shuffle=True)
    net_glob.train()
    for epoch in range(args.epochs):
        for data, target in train_loader:
            data, target = data.to(device), target.to(device)
            optimizer.zero_grad()
            output = net_glob(data)
            loss = F.cross_entropy(output, target)  # expect: cross-entropy-after-softmax
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
