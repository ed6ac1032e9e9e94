import torch

from engine import fit
from model import Regressor


def main(loader):
    model = Regressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    for _ in range(10):
        fit(model, loader, optimizer, accum_steps=4)


if __name__ == "__main__":
    main([])
