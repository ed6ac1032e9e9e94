import torch
import torch.nn as nn

from models import SmallCNN

images = torch.load("data/images.pt")
labels = torch.load("data/labels.pt")

net = SmallCNN()
optimizer = torch.optim.Adam(net.parameters())
for epoch in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(net(images), labels)
    loss.backward()
    optimizer.step()

image = images[:1].clone().requires_grad_()
score = net(image)[0, labels[0]]
score.backward()
saliency = image.grad.abs().squeeze()
print(saliency.shape)
