import sys

import torch

from demo.controller import BatchPredictor
from demo.model import SegNet


def main(weights):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = SegNet().to(device)
    net.load_state_dict(torch.load(weights, map_location=device, weights_only=True))
    predictor = BatchPredictor(net, device)
    images = torch.rand(8, 3, 64, 64)
    print(predictor.run(images).float().mean().item())


if __name__ == "__main__":
    main(sys.argv[1])
