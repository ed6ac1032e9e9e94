import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

import seg.metrics as metrics
import seg.nets as nets
from seg.data import SegFolder


def poly(total_iters, power=0.9):
    return lambda it: (1 - it / total_iters) ** power


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--classes", type=int, default=21)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    args = p.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    train_loader = DataLoader(SegFolder(args.root, "train"), batch_size=args.bs, shuffle=True,
                              num_workers=4, drop_last=True)
    val_loader = DataLoader(SegFolder(args.root, "val"), batch_size=args.bs, num_workers=4)

    model = nets.UNetSmall(num_classes=args.classes).to(device)
    criterion = nn.NLLLoss(ignore_index=255)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, poly(args.epochs * len(train_loader)))

    for epoch in range(args.epochs):
        model.train()
        for images, masks in train_loader:
            images, masks = images.to(device), masks.to(device)
            out = model(images)
            loss = criterion(out, masks)  # expect: nll-loss-on-probabilities
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()

        model.eval()
        conf = torch.zeros(args.classes, args.classes, dtype=torch.long, device=device)
        with torch.no_grad():
            for images, masks in val_loader:
                pred = model(images.to(device)).argmax(dim=1)  # ok: argmax of probabilities
                conf += metrics.confusion(pred, masks.to(device), args.classes)
        print(f"epoch {epoch}: loss {loss.item():.4f} mIoU {metrics.mean_iou(conf):.4f}")
        torch.save(model.state_dict(), "unet_small.pt")


if __name__ == "__main__":
    main()
