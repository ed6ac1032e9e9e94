import torch

model = torch.load("checkpoints/classifier.pt")  # expect: checkpoint-fails-weights-only-load
model.eval()
backbone = torch.load("checkpoints/pretrained_backbone.pt")  # a file the project does not write
with torch.no_grad():
    print(model(torch.randn(1, 16)).argmax(1))


def load_epoch(epoch):
    return torch.load(f"checkpoints/epoch_{epoch}_classifier.pt")  # expect: checkpoint-fails-weights-only-load
