import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

from lib.trainer import ContrastiveLossTrainer
from lib.wrapped_trainer import TripletTrainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="ResUNetBN2C")
    parser.add_argument("--in_channels", type=int, default=1)
    parser.add_argument("--out_channels", type=int, default=16)
    parser.add_argument("--optimizer", default="SGD")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--exp_gamma", type=float, default=0.99)
    parser.add_argument("--max_epoch", type=int, default=10)
    parser.add_argument("--triplet", action="store_true")
    config = parser.parse_args()
    torch.manual_seed(0)
    pairs = TensorDataset(torch.randn(256, 1, 64), torch.randn(256, 1, 64))
    train_loader = DataLoader(pairs, batch_size=16, shuffle=True)
    val_loader = DataLoader(pairs, batch_size=16)
    trainer_class = TripletTrainer if config.triplet else ContrastiveLossTrainer
    trainer_class(config, train_loader, val_loader).train()


if __name__ == "__main__":
    main()
