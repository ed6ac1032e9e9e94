import argparse

import numpy as np
import torch

from model import MLP
from utils.checkpoint import load_checkpoint


@torch.inference_mode()
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--features", required=True)
    opts = parser.parse_args()

    ckpt = load_checkpoint(opts.checkpoint)
    train_args = ckpt["args"]
    arrays = np.load(opts.features)
    x = torch.from_numpy(arrays["x_test"]).float()
    y = torch.from_numpy(arrays["y_test"]).long()
    model = MLP(x.shape[1], train_args.hidden, train_args.num_classes, depth=train_args.depth)
    model.load_state_dict(ckpt["model"])
    model.eval()
    acc = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"test accuracy {acc:.4f} (trained {ckpt['epoch'] + 1} epochs, lr {train_args.lr})")


if __name__ == "__main__":
    main()
