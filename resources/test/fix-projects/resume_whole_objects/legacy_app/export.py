import torch
from torch import nn


def export(model: nn.Module, optimizer: torch.optim.Optimizer, path: str = "weights.pt"):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 10}, path)


def restore(model: nn.Module, path: str = "weights.pt"):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return state["step"]


def main():
    model = nn.Linear(4, 4)
    optimizer = torch.optim.Adam(model.parameters())
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "weights.pt")
    state = torch.load("weights.pt")
    model.load_state_dict(state["model"])
