"""Attention scores of every slide, for each fold's checkpoint."""
import argparse
import os

import torch

from utils.eval_utils import *


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpts", nargs="+", required=True)
    parser.add_argument("--bags", required=True)
    parser.add_argument("--model-type", default="attention")
    args = parser.parse_args()
    bags = sorted(f for f in os.listdir(args.bags) if f.endswith(".pt"))
    for ckpt in args.ckpts:
        model = initiate_model(args.model_type, ckpt)
        with torch.no_grad():
            for name in bags:
                features = torch.load(os.path.join(args.bags, name), weights_only=True)
                logits, scores = model(features)  # ok: the helper put it in eval mode
                print(name, logits.argmax(dim=1).item())


if __name__ == "__main__":
    main()
