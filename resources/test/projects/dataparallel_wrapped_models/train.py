import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from data import SegmentationSet, FeatureSet
from engine import evaluate, score
from models import LinearProbe, SegNet


class Trainer:
    def __init__(self, net, loaders, device):
        self.model = nn.DataParallel(net).to(device)
        self.train_loader, self.val_loader = loaders
        self.device = device
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()

    def fit(self, epochs):
        self.model.train()
        for epoch in range(epochs):
            for images, masks in self.train_loader:
                self.optimizer.zero_grad()
                out = self.model(images.to(self.device))
                self.criterion(out, masks.to(self.device)).backward()
                self.optimizer.step()
            acc = evaluate(self.model, self.val_loader, self.device)  # expect: missing-train-after-eval
            print(f"epoch {epoch}: pixel accuracy {acc:.3f}")



class Predictor:
    def __init__(self, checkpoint, device):
        net = SegNet()
        net.load_state_dict(torch.load(checkpoint, map_location=device, weights_only=True))
        self.net = nn.DataParallel(net).to(device)
        self.device = device

    def predict(self, loader):
        with torch.no_grad():
            return [self.net(x.to(self.device)).argmax(1) for x, _ in loader]  # expect: missing-eval-mode


def fit_probe(device, epochs=5):
    probe = nn.DataParallel(LinearProbe()).to(device)
    opt = torch.optim.Adam(probe.parameters(), lr=1e-3)
    train_loader = DataLoader(FeatureSet("train"), batch_size=256, shuffle=True)
    val_loader = DataLoader(FeatureSet("val"), batch_size=256)
    for epoch in range(epochs):
        for feats, labels in train_loader:
            opt.zero_grad()
            nn.functional.cross_entropy(probe(feats.to(device)), labels.to(device)).backward()
            opt.step()
        print(score(probe, val_loader, device))  # ok: a linear probe has no Dropout/BatchNorm


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loaders = (
        DataLoader(SegmentationSet("train"), batch_size=8, shuffle=True),
        DataLoader(SegmentationSet("val"), batch_size=8),
    )
    trainer = Trainer(SegNet(), loaders, device)
    trainer.fit(args.epochs)
    torch.save(trainer.model.module.state_dict(), "segnet.pt")
    Predictor("segnet.pt", device).predict(loaders[1])
    fit_probe(device)


if __name__ == "__main__":
    main()
