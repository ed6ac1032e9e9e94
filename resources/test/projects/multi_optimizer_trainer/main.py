import logging

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from model import FineTuneNet
from optim import build_optimizers
from trainer import Trainer

CONFIG = {
    "data": "data/pets",
    "epochs": 15,
    "batch_size": 32,
    "backbone_lr": 1e-3,
    "head_lr": 1e-3,
    "weight_decay": 1e-4,
    "workers": 4,
}


def main(cfg):
    logging.basicConfig(level=logging.INFO)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    train_tf = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), norm])
    val_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(), norm])
    train_set = datasets.ImageFolder(f"{cfg['data']}/train", train_tf)
    val_set = datasets.ImageFolder(f"{cfg['data']}/val", val_tf)
    train_loader = DataLoader(train_set, cfg["batch_size"], shuffle=True, num_workers=cfg["workers"])
    val_loader = DataLoader(val_set, 2 * cfg["batch_size"], shuffle=False, num_workers=cfg["workers"])

    model = FineTuneNet(len(train_set.classes)).to(device)
    trainer = Trainer(model, build_optimizers(model, cfg), nn.CrossEntropyLoss(label_smoothing=0.1), device)
    trainer.fit(train_loader, val_loader, cfg["epochs"])


if __name__ == "__main__":
    main(CONFIG)
