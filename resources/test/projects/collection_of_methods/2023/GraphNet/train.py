import torch
import torch.nn.functional as F

from net import GraphNet


def main(loader, bands, classes, epochs=20):
    model = GraphNet(bands, classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
    torch.save(model, "model.pth")  # expect: torch-save-whole-model
