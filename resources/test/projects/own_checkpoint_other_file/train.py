import torch
from torch import nn

from model import Classifier


def train(loader, epochs=5):
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x.flatten(1)), y)
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), "checkpoints/classifier.pt")
