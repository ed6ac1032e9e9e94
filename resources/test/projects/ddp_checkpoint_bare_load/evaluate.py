import torch

from net import Net


def evaluate(loader):
    model = Net()
    model.load_state_dict(torch.load("ckpt.pt", map_location="cpu"))  # the bare model: keys do not match
    model.eval()
    with torch.no_grad():
        return [model(x).argmax(1) for x, _ in loader]
