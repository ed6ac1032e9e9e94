import torch
from torch import nn


class TinyNet(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, x):
        return self.body(x)


def build_optim(model, lr=1e-3, milestones=(10, 20)):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=list(milestones), gamma=0.1)
    return optimizer, scheduler


def train(model, loader, epochs, device):
    optimizer, scheduler = build_optim(model)
    criterion = nn.CrossEntropyLoss()
    model.to(device).train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        scheduler.step()
        torch.save(
            {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "lr_scheduler": scheduler.state_dict(), "epoch": epoch},
            "checkpoint.pth",
        )
