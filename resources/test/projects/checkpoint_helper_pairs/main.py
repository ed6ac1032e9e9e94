import torch
from torch import nn

from ckpt import convert, load_model, save_model

net = nn.Linear(4, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]:
    opt.zero_grad()
    nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
save_model(net, "net.pt")
again = load_model("net.pt")
convert("weights.pt", "full.pt", lambda: nn.Linear(4, 2))
