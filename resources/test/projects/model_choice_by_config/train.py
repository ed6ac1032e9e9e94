import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from utils import get_any_network, get_cifar_network, get_network


def eval_training(epoch):
    net.eval()
    correct = 0.0
    for images, labels in test_loader:
        images, labels = images.to(args.device), labels.to(args.device)
        outputs = net(images)  # expect: eval-without-no-grad
        _, preds = outputs.max(1)
        correct += preds.eq(labels).sum().item()
    print(f"epoch {epoch}: test accuracy {correct / len(test_loader.dataset):.4f}")
    return correct


def evaluate_cifar(model, loader, device):
    model.eval()
    correct = 0
    for images, labels in loader:
        preds = model(images.to(device)).argmax(1)  # expect: eval-without-no-grad
        correct += (preds == labels.to(device)).sum().item()
    return correct / len(loader.dataset)


def evaluate_any(model, loader):
    correct = 0
    for images, labels in loader:
        preds = model(images).argmax(1)  # ok: may be a third-party object, not known to be a torch module
        correct += (preds == labels).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--net", default="cnn")
    parser.add_argument("--dataset", default="cifar")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()

    net = get_network(args)
    train_set = datasets.CIFAR10("./data", train=True, download=True, transform=transforms.ToTensor())
    test_set = datasets.CIFAR10("./data", train=False, download=True, transform=transforms.ToTensor())
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=128)
    loss_function = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(1, 201):
        net.train()
        for images, labels in train_loader:
            images, labels = images.to(args.device), labels.to(args.device)
            optimizer.zero_grad()
            outputs = net(images)
            loss = loss_function(outputs, labels)  # expect: cross-entropy-after-softmax
            loss.backward()
            optimizer.step()
        eval_training(epoch)

    cifar_net = get_cifar_network("resnet").to(args.device)
    print(evaluate_cifar(cifar_net, test_loader, args.device))
    other = get_any_network("vit_tiny")
    print(evaluate_any(other, test_loader))
