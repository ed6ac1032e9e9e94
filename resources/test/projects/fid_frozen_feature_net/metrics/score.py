"""Frechet distance between the feature statistics of two image folders."""
import numpy as np
import torch
from scipy import linalg


def get_activations(images, model, batch_size=50, dims=64, device="cpu"):
    model.eval()
    pred_arr = np.empty((len(images), dims))
    for i in range(0, len(images), batch_size):
        batch = torch.from_numpy(images[i:i + batch_size]).float().to(device)
        pred = model(batch)  # ok: the constructor froze every parameter (requires_grad=False)
        pred_arr[i:i + batch_size] = pred.cpu().numpy().reshape(pred.size(0), -1)
    return pred_arr


def activation_statistics(images, model, batch_size=50, dims=64, device="cpu"):
    act = get_activations(images, model, batch_size, dims, device)
    return np.mean(act, axis=0), np.cov(act, rowvar=False)


def frechet_distance(mu1, sigma1, mu2, sigma2):
    diff = mu1 - mu2
    covmean, _ = linalg.sqrtm(sigma1.dot(sigma2), disp=False)
    return diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean.real)
