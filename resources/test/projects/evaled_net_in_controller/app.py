import argparse

import torch

from demo.controller import ClickController
from demo.model import SegNet


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", required=True)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = SegNet()
    net.load_state_dict(torch.load(args.weights, map_location=device, weights_only=True))
    net.to(device)
    net.eval()
    controller = ClickController(net, device)
    controller.add_click(10, 12, True)
    image = torch.rand(1, 3, 64, 64)
    mask = controller.predict(image)
    print(mask.float().mean().item())


if __name__ == "__main__":
    main()
