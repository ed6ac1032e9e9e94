"""Start from the base model's weights on a new, smaller label set (a fresh optimizer on purpose)."""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from common import accuracy, build_model, image_folder


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pretrained", default="runs/base/last.pt")
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=10)
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = image_folder(os.path.join(args.data, "train"), train=True)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8)
    val_loader = DataLoader(image_folder(os.path.join(args.data, "val"), train=False), batch_size=256, num_workers=8)

    model = build_model(len(train_set.classes))
    state = torch.load(args.pretrained, map_location="cpu", weights_only=True)["model"]
    state = {k: v for k, v in state.items() if not k.startswith("fc.")}
    missing, unexpected = model.load_state_dict(state, strict=False)  # ok: transfer, not a resume
    assert not unexpected and all(k.startswith("fc.") for k in missing), (missing, unexpected)
    model.to(device)

    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        print(f"epoch {epoch}: val acc {accuracy(model, val_loader, device):.4f}")
    torch.save(model.state_dict(), "finetuned.pt")


if __name__ == "__main__":
    main()
