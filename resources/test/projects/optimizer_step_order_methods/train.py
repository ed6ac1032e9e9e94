import argparse
import logging

import pandas as pd
import torch
from torch.utils.data import DataLoader

from data import WindowDataset
from model import LSTMForecaster
from trainer import ForecastTrainer


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv", help="hourly load data, first column is the target")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO)

    df = pd.read_csv(args.csv, index_col=0, parse_dates=True)
    values = ((df - df.mean()) / df.std()).to_numpy()
    split = int(0.8 * len(values))
    train_loader = DataLoader(WindowDataset(values[:split]), batch_size=64, shuffle=True, drop_last=True)
    val_loader = DataLoader(WindowDataset(values[split:]), batch_size=256)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = LSTMForecaster(values.shape[1]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.epochs * len(train_loader))
    ForecastTrainer(model, optimizer, scheduler, device).fit(train_loader, val_loader, args.epochs)
    torch.save(model.state_dict(), "forecaster.pt")


if __name__ == "__main__":
    main()
