import random

import numpy as np
import torch


def save_training_state(path, model, optimizer, epoch):
    """Everything needed to resume a run, RNG states included."""
    state = {
        "epoch": epoch,
        "model_state": model.state_dict(),
        "optimizer_state": optimizer.state_dict(),
        "numpy_rng_state": np.random.get_state(),
        "python_rng_state": random.getstate(),
    }
    torch.save(state, path)


def resume(path, model, optimizer):
    state = torch.load(path, map_location="cpu")  # expect: checkpoint-fails-weights-only-load
    model.load_state_dict(state["model_state"])
    optimizer.load_state_dict(state["optimizer_state"])
    np.random.set_state(state["numpy_rng_state"])
    random.setstate(state["python_rng_state"])
    return state["epoch"] + 1
