import torch
import torch.nn as nn
import torch.nn.functional as F

from sparse import SparseWeights, SparseWeightsConv


def build():
    return nn.Sequential(
        SparseWeightsConv(nn.Conv2d(1, 8, 3), sparsity=0.3),
        nn.ReLU(),
        nn.Flatten(),
        SparseWeights(nn.Linear(8 * 26 * 26, 10)),
    )


def main(loader, epochs=5):
    torch.manual_seed(0)
    model = build()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), "sparse.pt")
