import torch
import torch.nn as nn
import torchvision


class LinearProbe(nn.Module):
    def __init__(self, encoder, n_features, n_classes=10):
        super().__init__()
        self.encoder = encoder
        self.fc = nn.Linear(n_features, n_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.encoder(x), 1))


def build_encoder():
    net = torchvision.models.resnet18(weights=None)
    net.fc = nn.Identity()
    return net


def extract(loader):
    encoder = torchvision.models.resnet18(weights=None)
    probe = LinearProbe(encoder, 1000)
    feats = []
    with torch.no_grad():
        for x, _ in loader:
            feats.append(probe(x))  # expect: missing-eval-mode
    return torch.cat(feats)


def extract_evaluated(loader):
    model = LinearProbe(encoder=build_encoder(), n_features=512)
    model.eval()
    with torch.no_grad():
        return torch.cat([model(x) for x, _ in loader])  # ok: switched to eval mode


def extract_linear(loader):
    probe = LinearProbe(nn.Sequential(nn.Flatten(), nn.Linear(784, 64)), 64)
    with torch.no_grad():
        return torch.cat([probe(x) for x, _ in loader])  # ok: nothing train/eval-sensitive
