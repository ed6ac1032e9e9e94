"""Interactive segmentation demo: no training here, autograd is off for the whole process."""
import torch

from interact.controller import ClickController
from interact.gui import launch
from model.metrics import click_accuracy
from model.network import SegNet

torch.set_grad_enabled(False)

if __name__ == "__main__":
    net = SegNet()
    net.load_state_dict(torch.load("segnet.pth", weights_only=True))
    net.eval()
    frames = torch.load("frames.pt", weights_only=True)
    clicks = torch.load("clicks.pt", weights_only=True)
    launch(ClickController(net, num_objects=3), frames, clicks)
    print(click_accuracy(net, frames[0], clicks[0]))
