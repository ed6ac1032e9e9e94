import torch

from model import Classifier


def load_model():
    model = Classifier()
    state = torch.load("checkpoints/classifier.pt", map_location="cpu")  # expect: torch-load-without-weights-only
    model.load_state_dict(state)
    return model.eval()
