from collections import OrderedDict

import torch

from net import Net


def load_model(path):
    model = Net()
    state_dict = torch.load(path, map_location="cpu")
    new_state_dict = OrderedDict()
    for k, v in state_dict.items():
        name = k.replace("module.", "")  # remove the `module.` prefix of DDP checkpoints
        new_state_dict[name] = v
    model.load_state_dict(new_state_dict)
    model.eval()
    return model
