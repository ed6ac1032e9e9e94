import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from engine import fit
from models import SmallCNN

tf = transforms.ToTensor()
train_set = datasets.MNIST("data", train=True, download=True, transform=tf)
test_set = datasets.MNIST("data", train=False, download=True, transform=tf)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)

net = SmallCNN()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
fit(net, train_loader, optimizer, nn.CrossEntropyLoss(), epochs=3)

images = torch.stack([test_set[i][0] for i in range(16)])
labels = torch.tensor([test_set[i][1] for i in range(16)])
predicted = net(images).argmax(1)  # expect: missing-eval-mode
print("predicted:", predicted.tolist())
print("actual:   ", labels.tolist())
