import torch
from torch.utils.data import DataLoader

from separator.model import Separator
from separator.solver import Solver


def main():
    train_set = torch.load("tracks_train.pt", weights_only=True)
    valid_set = torch.load("tracks_valid.pt", weights_only=True)
    loaders = {
        "train": DataLoader(train_set, batch_size=16, shuffle=True, num_workers=2),
        "valid": DataLoader(valid_set, batch_size=1, shuffle=False),
    }
    model = Separator()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    Solver(loaders, model, optimizer).train(epochs=120)


if __name__ == "__main__":
    main()
