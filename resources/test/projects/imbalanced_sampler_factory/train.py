import argparse
import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import models, transforms

from dataset import SkinLesions
from samplers import class_balanced_sampler

logger = logging.getLogger("lesions")


def build_transforms():
    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train = transforms.Compose([transforms.RandomResizedCrop(224, scale=(0.6, 1.0)), transforms.RandomHorizontalFlip(),
                                transforms.RandomVerticalFlip(), transforms.ColorJitter(0.2, 0.2, 0.2),
                                transforms.ToTensor(), norm])
    val = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), norm])
    return train, val


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default="data/ham10000")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--lr", type=float, default=1e-4)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)

    train_tf, val_tf = build_transforms()
    train_set = SkinLesions(args.root, "train", train_tf)
    val_set = SkinLesions(args.root, "val", val_tf)
    sampler = class_balanced_sampler(train_set.targets)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, sampler=sampler, num_workers=6)  # expect: dataloader-sampler-with-shuffle
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False, num_workers=6)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = models.efficientnet_b0(weights=models.EfficientNet_B0_Weights.DEFAULT)
    model.classifier[1] = nn.Linear(model.classifier[1].in_features, len(SkinLesions.CLASSES))
    model = model.to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        model.train()
        for images, targets in train_loader:
            images, targets = images.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = criterion(model(images), targets)
            loss.backward()
            optimizer.step()
        model.eval()
        per_class = torch.zeros(len(SkinLesions.CLASSES), 2)
        with torch.no_grad():
            for images, targets in val_loader:
                preds = model(images.to(device)).argmax(1).cpu()
                for c in range(len(SkinLesions.CLASSES)):
                    per_class[c, 0] += ((preds == c) & (targets == c)).sum()
                    per_class[c, 1] += (targets == c).sum()
        balanced_acc = (per_class[:, 0] / per_class[:, 1].clamp(min=1)).mean().item()
        logger.info("epoch %d balanced accuracy %.4f", epoch, balanced_acc)
        torch.save(model.state_dict(), "efficientnet_b0_lesions.pt")


if __name__ == "__main__":
    main()
