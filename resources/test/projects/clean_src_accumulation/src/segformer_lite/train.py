import argparse
import math

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.transforms import v2

from segformer_lite import AmpStepper, LiteSegNet


def loaders(root, batch_size):
    tf = v2.Compose([v2.ToImage(), v2.Resize((256, 256)), v2.ToDtype(torch.float32, scale=True)])
    target_tf = transforms.Compose([transforms.Resize((256, 256), interpolation=transforms.InterpolationMode.NEAREST),
                                    transforms.PILToTensor()])
    train = datasets.VOCSegmentation(root, image_set="train", transform=tf, target_transform=target_tf)
    val = datasets.VOCSegmentation(root, image_set="val", transform=tf, target_transform=target_tf)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=4, drop_last=True),
            DataLoader(val, batch_size=batch_size, shuffle=False, num_workers=4))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default="data/voc")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--accum", type=int, default=8, help="micro-batches per optimizer step")
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, val_loader = loaders(args.root, args.batch_size)
    model = LiteSegNet(num_classes=21).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-2)
    steps_per_epoch = math.ceil(len(train_loader) / args.accum)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                    steps_per_epoch=steps_per_epoch)
    stepper = AmpStepper(model, optimizer, enabled=device.type == "cuda")

    optimizer.zero_grad(set_to_none=True)
    for epoch in range(args.epochs):
        model.train()
        for i, (images, masks) in enumerate(train_loader):
            images, masks = images.to(device), masks.squeeze(1).long().to(device)
            with torch.autocast(device.type, dtype=torch.float16, enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(images), masks, ignore_index=255) / args.accum
            stepper.backward(loss)
            if (i + 1) % args.accum == 0:
                stepper.step()  # ok: zero_grad happens after the step, once per accumulation window
                scheduler.step()  # ok: OneCycleLR is a per-step schedule

        model.eval()
        inter = torch.zeros(21, device=device)
        union = torch.zeros(21, device=device)
        with torch.no_grad():
            for images, masks in val_loader:
                pred = model(images.to(device)).argmax(1)
                masks = masks.squeeze(1).long().to(device)
                valid = masks != 255
                for c in range(21):
                    p_c, t_c = (pred == c) & valid, (masks == c) & valid
                    inter[c] += (p_c & t_c).sum()
                    union[c] += (p_c | t_c).sum()
        print(f"epoch {epoch}: mIoU {(inter / union.clamp(min=1)).mean().item():.4f}")
        torch.save(model.state_dict(), "lite_segnet.pt")


if __name__ == "__main__":
    main()
