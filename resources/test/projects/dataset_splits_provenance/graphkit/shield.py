"""Safety shields stored as `shield_q.pt` artifacts by the synthesis stage of another tool."""
from pathlib import Path

import numpy as np
import torch


def load_payload(path: Path):
    """Load a shield artifact onto the CPU."""
    return torch.load(path, map_location="cpu", weights_only=False)  # expect: torch-load-without-weights-only


def load_mask(path: Path, key="shield"):
    payload = load_payload(path)
    return np.asarray(payload[key].numpy(), dtype=np.int64)
