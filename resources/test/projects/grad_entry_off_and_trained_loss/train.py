import torch

from model.losses import clip_error, sequence_loss
from model.metrics import click_accuracy
from model.network import SegNet


def main():
    net = SegNet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-4)
    clips = torch.load("clips.pt", weights_only=True)
    for epoch in range(10):
        for frames, labels, images, clicks in clips:
            losses = sequence_loss(net, frames, labels)
            opt.zero_grad()
            losses["total"].backward()
            opt.step()
        print(epoch, clip_error(net, frames, labels).item())
        print(click_accuracy(net, images, clicks).item())
    torch.save(net.state_dict(), "segnet.pth")


if __name__ == "__main__":
    main()
