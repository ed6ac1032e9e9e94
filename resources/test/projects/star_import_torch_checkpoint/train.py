"""Course-style script: torch, nn and F come from `from common import *`."""
from common import *

net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
data = [(torch.randn(8, 784), torch.randint(0, 10, (8,))) for _ in range(10)]
for epoch in range(2):
    for x, y in data:
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
torch.save(net.state_dict(), "weights.pt")  # ok: a state_dict loads with weights_only=True
torch.save(net, "whole.pt")  # expect: torch-save-whole-model
