import sys

import torch

from utils.eval_utils import load_frozen


@torch.no_grad()
def predict(ckpt, paths):
    model = load_frozen(ckpt)
    return [model(torch.load(p, weights_only=True))[0].argmax(dim=1).item() for p in paths]  # ok


if __name__ == "__main__":
    print(predict(sys.argv[1], sys.argv[2:]))
