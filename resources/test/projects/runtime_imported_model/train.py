import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.transforms as transforms

from archs.small_cnn import Net
from engine import predict_batch, train_one_epoch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_data = torchvision.datasets.CIFAR10("data", train=True, download=True,
                                          transform=transforms.ToTensor())
train_loader = torch.utils.data.DataLoader(train_data, batch_size=64, shuffle=True)

model = Net().to(device)
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
for epoch in range(10):
    train_one_epoch(model, train_loader, criterion, optimizer, device)
torch.save(model.state_dict(), "model_cifar.pt")

images, _ = next(iter(train_loader))
print(predict_batch(model, images.to(device)))
