import torch
from torch.utils.data import DataLoader, TensorDataset

from seg.evaluate import evaluate
from seg.losses import FocalLoss
from seg.model import MetricTracker, TinyUNet

criterion = FocalLoss  # expect: loss-class-not-instantiated
Tracker = MetricTracker  # ok: not a loss


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images = torch.randn(64, 3, 32, 32)
    masks = (torch.rand(64, 1, 32, 32) > 0.5).float()
    train_loader = DataLoader(TensorDataset(images, masks), batch_size=8, shuffle=True)
    val_loader = DataLoader(TensorDataset(images, masks), batch_size=16)
    model = TinyUNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(5):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss = criterion(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        tracker = Tracker(logits.detach(), y)
        print(epoch, evaluate(model, val_loader, device), tracker.preds.shape)


if __name__ == "__main__":
    main()
