"""Evaluation helpers."""
import torch
from torch.autograd import Variable


def evaluate(model, loader):
    torch.no_grad()
    correct = 0
    for x, y in loader:
        x = Variable(x, volatile=True)
        logits = model.forward(x)
        correct += (logits.argmax(1) == y).sum().data[0]
    if torch.__version__ >= "2.1":
        print("new torch")
    return correct
