import torch

from common import Net

net = Net()
net.load_state_dict(torch.load("weights.pt"))  # ok: train.py saves a state_dict there
net.eval()
whole = torch.load("whole.pt")  # expect: checkpoint-fails-weights-only-load
whole.eval()
