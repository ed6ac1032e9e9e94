"""Checkpoint helpers of one module: each passes its path parameter through."""
import torch


def save_model(model, path):
    torch.save(model, path)  # expect: torch-save-whole-model


def load_model(path):
    return torch.load(path)  # expect: checkpoint-fails-weights-only-load


def convert(src_path, dst_path, build):
    """Read a state_dict, write a whole model: two files, two parameters."""
    model = build()
    model.load_state_dict(torch.load(src_path))  # ok: reads src_path, not what this writes
    torch.save(model, dst_path)
