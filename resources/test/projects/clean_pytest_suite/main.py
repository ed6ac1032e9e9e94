import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from speechnet import M5


def train(model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 20 == 0:
            print(f"train epoch {epoch} [{batch_idx}/{len(loader)}] loss {loss.item():.4f}")


def test(model, device, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data.to(device))  # ok: eval mode and no_grad
            correct += output.argmax(dim=-1).eq(target.to(device)).sum().item()
    acc = correct / len(loader.dataset)
    print(f"test accuracy {acc:.4f}")
    return acc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--features", default="data/speech_8k.pt")
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.load(args.features, map_location="cpu", weights_only=True)
    train_loader = DataLoader(TensorDataset(data["x_train"], data["y_train"]), batch_size=256, shuffle=True)
    test_loader = DataLoader(TensorDataset(data["x_test"], data["y_test"]), batch_size=256)
    model = M5(n_output=int(data["y_train"].max()) + 1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.1)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()


if __name__ == "__main__":
    main()
