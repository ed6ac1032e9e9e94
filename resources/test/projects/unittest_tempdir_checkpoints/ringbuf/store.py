import os

import torch


class SnapshotStore:
    """Writes one folder per step: `<root>/step-<n>/snapshot.pt`."""

    def __init__(self, root, writer=None):
        self.root = root
        self.writer = writer or self._write

    def _write(self, state, folder):
        os.makedirs(folder, exist_ok=True)
        torch.save(state, os.path.join(folder, "snapshot.pt"))

    def save(self, step, model, extra):
        folder = os.path.join(self.root, f"step-{step}")
        self.writer({"model": model.state_dict(), "extra": extra}, folder)
        return folder
