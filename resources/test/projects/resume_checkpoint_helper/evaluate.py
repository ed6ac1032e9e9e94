"""Evaluate a saved checkpoint on the validation split."""
import argparse

import torch
from torchvision import models

from data import val_loader


@torch.no_grad()
def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--checkpoint", default="checkpoints/model_best.pth.tar")
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    checkpoint = torch.load(args.checkpoint, map_location=device, weights_only=True)
    model = models.get_model(checkpoint["arch"], weights=None).to(device)
    model.load_state_dict(checkpoint["state_dict"])  # ok: evaluation only, nothing is trained afterwards
    model.eval()
    correct = total = 0
    for images, target in val_loader(args.data, 256, 8):
        images, target = images.to(device), target.to(device)
        correct += (model(images).argmax(1) == target).sum().item()
        total += target.numel()
    print(f"top-1: {100.0 * correct / total:.2f}% ({args.checkpoint}, epoch {checkpoint['epoch']})")


if __name__ == "__main__":
    main()
