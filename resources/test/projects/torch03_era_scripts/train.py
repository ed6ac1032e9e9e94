import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable
from torchvision import datasets, transforms

from evaluate import evaluate
from net import Net


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    tf = transforms.ToTensor()
    train_set = datasets.CIFAR10("data", train=True, download=True, transform=tf)
    test_set = datasets.CIFAR10("data", train=False, download=True, transform=tf)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=128, shuffle=True, num_workers=2)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=256, shuffle=False, num_workers=2)
    model = Net().cuda()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        model.train()
        for data, target in train_loader:
            data, target = Variable(data.cuda(async=True)), Variable(target.cuda(async=True))  # expect: syntax-error
            optimizer.zero_grad()
            loss = criterion(model(data), target)
            loss.backward()
            optimizer.step()
        val_loss, acc = evaluate(model, test_loader, criterion)
        print("epoch %d: loss %.4f acc %.4f" % (epoch, val_loss, acc))
        torch.save(model.state_dict(), "net.pth")


if __name__ == "__main__":
    main()
