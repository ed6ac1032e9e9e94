import sys

import torch

from nets import get_backbone


def score(name, weights, batches):
    backbone_cls = get_backbone(name)
    model = backbone_cls()
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    model.eval()
    total = 0.0
    with torch.no_grad():
        for images in batches:
            total += model(images).norm(dim=1).sum().item()  # ok
    return total


if __name__ == "__main__":
    print(score(sys.argv[1], sys.argv[2], []))
