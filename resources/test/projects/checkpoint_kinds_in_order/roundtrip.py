"""Save the whole model, then read it back into the same name."""
import torch

from model import Net

net = Net()
torch.save(net, "roundtrip.pt")  # expect: torch-save-whole-model
net = torch.load("roundtrip.pt")  # expect: checkpoint-fails-weights-only-load
print(net)

weights = Net()
weights = weights.state_dict()
torch.save(weights, "roundtrip_sd.pt")  # ok: by then `weights` is a state_dict
restored = Net()
restored.load_state_dict(torch.load("roundtrip_sd.pt"))  # ok
