import numpy as np


def mini_batch(device, data_loader, step_fn):
    mini_batch_losses = []
    for x_batch, y_batch in data_loader:
        x_batch = x_batch.to(device)
        y_batch = y_batch.to(device)
        mini_batch_losses.append(step_fn(x_batch, y_batch))
    return np.mean(mini_batch_losses)
