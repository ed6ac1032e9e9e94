"""The same network in PyTorch."""
import torch
from torch import nn as tnn

from data import load_split

x_train, y_train, x_test, y_test = (torch.tensor(a, dtype=torch.float32) for a in load_split())
net = tnn.Sequential(tnn.Linear(x_train.shape[1], 16), tnn.ReLU(), tnn.Linear(16, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = tnn.BCEWithLogitsLoss()

for epoch in range(500):
    optimizer.zero_grad()
    loss = criterion(net(x_train), y_train)
    loss.backward()
    optimizer.step()

correct = 0
for i in range(len(x_test)):
    y_pred = torch.round(torch.sigmoid(net(x_test[i])))  # expect: eval-without-no-grad
    correct += int(y_pred.item() == y_test[i].item())
print("test accuracy", correct / len(x_test))
