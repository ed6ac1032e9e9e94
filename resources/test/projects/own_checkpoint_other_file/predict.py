import sys

import torch

from model import Classifier


def load_model():
    model = Classifier()
    state = torch.load("checkpoints/classifier.pt", map_location="cpu")  # expect: torch-load-without-weights-only
    model.load_state_dict(state)
    return model.eval()


def load_user_model(path):
    model = Classifier()
    model.load_state_dict(torch.load(path, map_location="cpu"))  # expect: torch-load-without-weights-only
    return model.eval()


if __name__ == "__main__":
    m = load_user_model(sys.argv[1])
