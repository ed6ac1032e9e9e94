"""Feature statistics of a probe network that was fine-tuned first (its weights train)."""
import numpy as np
import torch


def probe_activations(images, model, batch_size=50, device="cpu"):
    model.eval()
    feats = []
    for i in range(0, len(images), batch_size):
        batch = torch.from_numpy(images[i:i + batch_size]).float().to(device)
        feats.append(model(batch).cpu().numpy())  # expect: eval-without-no-grad
    return np.concatenate(feats)
