import torch


def apply_model(model, mix, shifts=1):
    """Run the model on a whole track for evaluation, averaging over random shifts."""
    model.eval()
    out = 0.0
    with torch.no_grad():
        for _ in range(shifts):
            out = out + model(mix)
    return out / shifts
