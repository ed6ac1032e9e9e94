import torch

from engine import finetune
from model import Regressor


def main(loader):
    model = Regressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(3):
        finetune(model, loader, optimizer, accum_steps=8)


if __name__ == "__main__":
    main([])
