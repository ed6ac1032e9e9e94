import os

import torch


class BaseModel:
    """Holds the networks listed in `model_names` as attributes `net<name>`."""

    def __init__(self, opt):
        self.opt = opt
        self.model_names = []
        self.save_dir = os.path.join(opt.checkpoints_dir, opt.name)

    def eval(self):
        """Put every network in eval mode (test time, when asked for)."""
        for name in self.model_names:
            net = getattr(self, "net" + name)
            net.eval()

    def load_networks(self, epoch):
        for name in self.model_names:
            net = getattr(self, "net" + name)
            if isinstance(net, torch.nn.DataParallel):
                net = net.module
            path = os.path.join(self.save_dir, f"{epoch}_net_{name}.pth")
            net.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
