import argparse
import importlib
import os
import sys

import torch
import torch.nn as nn

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.utils import build_training_mode, init_distributed, set_seed


def parse_args():
    parser = argparse.ArgumentParser(description="classification training")
    parser.add_argument("--work-dir", type=str, help="path for get training config")
    return parser.parse_args()


def main():
    args = parse_args()
    sys.path.append(args.work_dir)
    config = importlib.import_module("train_config").config
    init_distributed(config)
    set_seed(config.seed + config.local_rank)
    model = build_training_mode(config, config.model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=0.9)
    for epoch in range(config.epochs):
        config.train_sampler.set_epoch(epoch)
        model.train()
        for images, labels in config.train_loader:
            images, labels = images.cuda(), labels.cuda()
            loss = criterion(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if config.local_rank == 0:
            torch.save(model.module.state_dict(), os.path.join(args.work_dir, f"epoch{epoch}.pth"))


if __name__ == "__main__":
    main()
