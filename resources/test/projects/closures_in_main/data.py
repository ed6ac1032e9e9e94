import numpy as np
import pandas as pd
import torch
from torch.utils.data import DataLoader, TensorDataset


def load_frame(path, target="label"):
    df = pd.read_csv(path)
    y = df.pop(target).astype("category").cat.codes.to_numpy()
    x = df.select_dtypes("number").fillna(0.0).to_numpy(dtype=np.float32)
    return x, y


def make_loaders(path, batch_size, val_fraction=0.2, seed=0):
    x, y = load_frame(path)
    mean, std = x.mean(0), x.std(0) + 1e-6
    x = (x - mean) / std
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(x))
    n_val = int(len(x) * val_fraction)
    val_idx, train_idx = idx[:n_val], idx[n_val:]
    to_ds = lambda i: TensorDataset(torch.from_numpy(x[i]), torch.from_numpy(y[i]).long())
    train_loader = DataLoader(to_ds(train_idx), batch_size=batch_size, shuffle=True, drop_last=True)
    val_loader = DataLoader(to_ds(val_idx), batch_size=4 * batch_size)
    return train_loader, val_loader, x.shape[1], int(y.max()) + 1
