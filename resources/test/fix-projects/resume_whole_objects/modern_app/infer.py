import torch

state = torch.load("model.pt", map_location="cpu")
