import argparse
import logging
import os

import timm
import torch
import yaml

from datasets import build_loaders
from engine import evaluate, train_one_epoch

log = logging.getLogger("birds")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/default.yaml")
    args = parser.parse_args()
    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    logging.basicConfig(level=logging.INFO)
    os.makedirs(cfg["output_dir"], exist_ok=True)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_loader, val_loader = build_loaders(cfg)
    model = timm.create_model("convnext_tiny", pretrained=True, num_classes=cfg["num_classes"]).to(device)
    criterion = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg["epochs"])
    scaler = torch.amp.GradScaler("cuda", enabled=device.type == "cuda")

    best = 0.0
    for epoch in range(cfg["epochs"]):
        loss = train_one_epoch(model, train_loader, criterion, optimizer, scaler, device)
        scheduler.step()
        acc, confusion, preview = evaluate(model, val_loader, device, cfg["num_classes"])
        log.info("epoch %d loss %.4f val acc %.4f preview %s", epoch, loss, acc, preview)
        if acc > best:
            best = acc
            torch.save(model.state_dict(), os.path.join(cfg["output_dir"], "best.pt"))
            torch.save(confusion, os.path.join(cfg["output_dir"], "confusion.pt"))


if __name__ == "__main__":
    main()
