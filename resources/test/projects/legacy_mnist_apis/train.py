from __future__ import print_function

import argparse

import torch
import torch.optim as optim
from torch.utils.data import DataLoader

from data import get_mnist
from losses import classification_loss
from regularizers import confidence_penalty, per_class_penalty
from model import AuxNet

parser = argparse.ArgumentParser(description="MNIST with an auxiliary classifier")
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--momentum", type=float, default=0.5)
parser.add_argument("--aux-weight", type=float, default=0.3)
parser.add_argument("--log-interval", type=int, default=10)
args = parser.parse_args()

train_set = get_mnist("../data", train=True)
test_set = get_mnist("../data", train=False)
print("train images:", train_set.train_data.size())  # expect: mnist-legacy-data-attributes
class_counts = torch.bincount(train_set.train_labels, minlength=10)  # expect: mnist-legacy-data-attributes
class_weight = class_counts.sum().float() / (10 * class_counts.float())

train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
test_loader = DataLoader(test_set, batch_size=1000)

model = AuxNet()
optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output, aux_output = model(data)
        loss = classification_loss(output, target, class_weight) + 0.1 * confidence_penalty(output)
        aux_loss = args.aux_weight * classification_loss(aux_output, target)
        loss.backward(retain_variables=True)  # expect: backward-retain-variables-removed
        aux_loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset), loss.data[0]))  # expect: tensor-data-zero-index
            spread = classification_loss(output, target) + per_class_penalty(output)
            print("first class:", spread.data[0])  # ok: the per-class penalty keeps the class dimension


def test():
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output, _ = model(data)
            correct += output.argmax(dim=1).eq(target).sum().item()
    total = len(test_set.test_labels)  # expect: mnist-legacy-data-attributes
    print("Test set: Accuracy: {}/{} ({:.0f}%)".format(correct, total, 100.0 * correct / total))


if __name__ == "__main__":
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test()
