import os.path as osp
from pathlib import Path

import torch
from torch import nn


def train(cfg, epochs):
    net_f = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    net_c = nn.Linear(8, 2)
    for epoch in range(epochs):
        torch.save(net_f, osp.join(cfg.out_dir, f"net_f_{epoch}.pt"))  # expect: torch-save-whole-model
        torch.save(net_c.state_dict(), Path(cfg.out_dir) / f"net_c_{epoch}.pt")
    torch.save(net_f, osp.join(cfg.out_dir, "source_F.pt"))  # expect: torch-save-whole-model
    torch.save(net_c.state_dict(), "%s/source_C.pt" % cfg.out_dir)
