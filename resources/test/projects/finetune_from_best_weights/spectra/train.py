import os

import torch
import torch.nn.functional as F

from spectra.checkpoint import save_training_state


def fit(model, loader, run_dir, epochs=10):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    best = float("inf")
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        if total < best:
            best = total
            torch.save(model.state_dict(), os.path.join(run_dir, "best_model.pt"))
        save_training_state(os.path.join(run_dir, "last_state.pt"), model, optimizer, epoch)
    return best
