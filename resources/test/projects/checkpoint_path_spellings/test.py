import torch
from torch import nn


def evaluate(cfg, epoch):
    net_f = torch.load(cfg.out_dir + "/net_f_" + str(epoch) + ".pt")  # expect: checkpoint-fails-weights-only-load
    net_c = nn.Linear(8, 2)
    net_c.load_state_dict(torch.load(f"{cfg.out_dir}/net_c_{epoch}.pt"))  # ok: a state_dict
    return net_f, net_c


def final(cfg):
    cfg.modelpath = cfg.out_dir + "/source_F.pt"
    net_f = torch.load(cfg.modelpath)  # expect: checkpoint-fails-weights-only-load
    cfg.modelpath = "{}/source_C.pt".format(cfg.out_dir)
    net_c = nn.Linear(8, 2)
    net_c.load_state_dict(torch.load(cfg.modelpath))  # ok: a state_dict
    return net_f, net_c
