"""The model is a module-level name; the functions use it."""
import torch

from model import Net

net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)


def train(batches):
    for x, y in batches:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()


def export():
    torch.save(net, "exported.pt")  # expect: torch-save-whole-model
    torch.save(net.state_dict(), "exported_sd.pt")  # ok: a state_dict
