import argparse

import torch


def load_source_weights(model, weights_path):
    """Start from the weights of an earlier run."""
    state = _read_state_dict(weights_path)
    missing, unexpected = model.load_state_dict(state, strict=False)
    return missing, unexpected


def _read_state_dict(path):
    """A bare state_dict, or a checkpoint that holds one under "model_state"."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)  # ok
    except TypeError:
        # torch < 1.13 has no weights_only argument.
        payload = torch.load(path, map_location="cpu")  # ok
    if isinstance(payload, dict) and "model_state" in payload:
        payload = payload["model_state"]
    return payload


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-weights", required=True, help="e.g. runs/a/best_model.pt")
    args = parser.parse_args()
    net = torch.nn.Linear(8, 3)
    print(load_source_weights(net, args.source_weights))
