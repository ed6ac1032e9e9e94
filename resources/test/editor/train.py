import torch
from torch import nn, optim

model = nn.Linear(10, 2)
torch.save(model.state_dict(), "ckpt.pt")
state = torch.load("ckpt.pt")
opt = optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
