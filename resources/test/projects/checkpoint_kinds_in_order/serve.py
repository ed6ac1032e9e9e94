import torch

from model import Net


def load_exported():
    return torch.load("exported.pt")  # expect: checkpoint-fails-weights-only-load


def load_weights():
    net = Net()
    net.load_state_dict(torch.load("exported_sd.pt"))  # ok: train.py saves a state_dict there
    return net.eval()
