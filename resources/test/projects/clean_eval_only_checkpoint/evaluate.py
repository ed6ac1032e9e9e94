import argparse

import torch
from torch.utils.data import DataLoader

from common import accuracy, build_model, image_folder


def main():
    p = argparse.ArgumentParser()
    p.add_argument("checkpoint")
    p.add_argument("--split", default="data/test")
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ckpt = torch.load(args.checkpoint, map_location=device, weights_only=True)  # ok: state_dicts, numbers, strings
    model = build_model(len(ckpt["classes"])).to(device)
    model.load_state_dict(ckpt["model"])  # ok: evaluation, the optimizer state is not needed
    loader = DataLoader(image_folder(args.split, train=False), batch_size=256, num_workers=8)
    print(f"accuracy {accuracy(model, loader, device):.4f} (epoch {ckpt['epoch']}, trained with lr {ckpt['args']['lr']})")


if __name__ == "__main__":
    main()
