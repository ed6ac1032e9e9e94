import torch


def predict(x):
    model = torch.load("model.pth")  # expect: checkpoint-fails-weights-only-load
    model.eval()
    with torch.no_grad():
        return model(x).argmax(1)
