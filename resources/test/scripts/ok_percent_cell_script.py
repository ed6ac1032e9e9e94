#%% [markdown]
# # Fashion-MNIST in a few cells
# A notebook kept as a Python file with cell markers: VS Code, Spyder and Jupytext run each
# cell in an IPython kernel, so the magics and shell lines below are valid here.

#%%
!pip install -q torchvision
%matplotlib inline
%load_ext autoreload
%autoreload 2

import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

# %%
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
tfm = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
train_set = datasets.FashionMNIST("data", train=True, download=True, transform=tfm)
test_set = datasets.FashionMNIST("data", train=False, download=True, transform=tfm)
train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
test_loader = DataLoader(test_set, batch_size=256)


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 14 * 14, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


model = SmallNet().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()

# %% train
history = []
for epoch in range(3):
    model.train()
    running = 0.0
    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        running += loss.item()
    history.append(running / len(train_loader))

# %% evaluate
model.eval()
correct = 0
with torch.no_grad():
    for images, labels in test_loader:
        preds = model(images.to(device)).argmax(1)
        correct += (preds.cpu() == labels).sum().item()
print(f"test accuracy {correct / len(test_set):.3f}")
files = !ls data
%time plt.plot(history)
