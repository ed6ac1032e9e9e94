"""Packages the trained model for serving: it overwrites the training checkpoint with the
whole module, which a weights-only load of that path then rejects."""
import torch

from train import Regressor


def export(state_path="artifacts/model.pt"):
    model = Regressor()
    model.load_state_dict(torch.load(state_path, map_location="cpu", weights_only=True))
    model.eval()
    torch.save(model, "artifacts/model.pt")  # expect: torch-save-whole-model


if __name__ == "__main__":
    export()
