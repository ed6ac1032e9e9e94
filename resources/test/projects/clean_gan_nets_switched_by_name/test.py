import argparse

import torch

from models import create_model


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--name", default="horse2zebra")
    p.add_argument("--checkpoints_dir", default="./checkpoints")
    p.add_argument("--gpu_ids", type=int, nargs="*", default=[])
    p.add_argument("--no_dropout", action="store_true")
    p.add_argument("--eval", action="store_true", help="use eval mode at test time")
    p.add_argument("--epoch", default="latest")
    return p.parse_args()


if __name__ == "__main__":
    opt = parse()
    model = create_model(opt)
    model.load_networks(opt.epoch)
    if opt.eval:
        model.eval()
    for i in range(4):
        model.set_input({"A": torch.randn(1, 3, 64, 64), "B": torch.randn(1, 3, 64, 64)})
        model.test()
