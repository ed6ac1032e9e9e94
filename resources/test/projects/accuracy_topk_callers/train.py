import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.models import resnet18

from reid.trainers import Trainer


def main():
    train_set = datasets.CIFAR10("data", train=True, download=True, transform=transforms.ToTensor())
    loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=2)
    model = resnet18(weights=None, num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    trainer = Trainer(model, nn.CrossEntropyLoss())
    for epoch in range(10):
        trainer.train(epoch, loader, optimizer)
    torch.save(model.state_dict(), "model.pth")


if __name__ == "__main__":
    main()
