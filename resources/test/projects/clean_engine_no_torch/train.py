import argparse

import numpy as np
import torch
from sklearn.datasets import fetch_california_housing
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch.utils.data import DataLoader, TensorDataset

from engine import evaluate, train_one_epoch
from model import HousingRegressor


def to_loader(x, y, batch_size, shuffle):
    ds = TensorDataset(torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32)))
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-3)
    args = p.parse_args()

    x, y = fetch_california_housing(return_X_y=True)
    x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2, random_state=0)
    scaler = StandardScaler().fit(x_train)
    train_loader = to_loader(scaler.transform(x_train), y_train, 128, shuffle=True)
    val_loader = to_loader(scaler.transform(x_val), y_val, 1024, shuffle=False)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = HousingRegressor(x.shape[1]).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.MSELoss()
    for epoch in range(args.epochs):
        train_mse = train_one_epoch(model, train_loader, optimizer, loss_fn, device,
                                    max_norm=5.0, clip_fn=torch.nn.utils.clip_grad_norm_)
        with torch.no_grad():
            val_mse, val_rmse = evaluate(model, val_loader, loss_fn, device)
        print(f"epoch {epoch:3d} train mse {train_mse:.4f} val rmse {val_rmse:.4f}")
    torch.save(model.state_dict(), "housing_regressor.pt")


if __name__ == "__main__":
    main()
