import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from engine import evaluate, fit
from models import SmallCNN

tf = transforms.ToTensor()
train_loader = DataLoader(datasets.MNIST("data", train=True, transform=tf), batch_size=64, shuffle=True)
test_set = datasets.MNIST("data", train=False, transform=tf)
test_loader = DataLoader(test_set, batch_size=256)

net = SmallCNN()
optimizer = torch.optim.Adam(net.parameters())
fit(net, train_loader, optimizer, nn.CrossEntropyLoss(), epochs=3)
print("test accuracy:", evaluate(net, test_loader))

images = torch.stack([test_set[i][0] for i in range(16)])
with torch.no_grad():
    predicted = net(images).argmax(1)
print(predicted.tolist())
