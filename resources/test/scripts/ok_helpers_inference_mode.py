import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class NoisyDataset(Dataset):
    def __init__(self, n=1000, seed=0):
        self.data = np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)
        self.labels = (self.data.sum(axis=1) > 0).astype(np.int64)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        x = torch.from_numpy(self.data[idx])
        return x, int(self.labels[idx])


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(16, 64), nn.Linear(64, 64)])
        self.head = nn.Linear(64, 2)

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        x = F.dropout(x, p=0.1, training=self.training)
        return self.head(x)


def train(model, loader, optimizer, device):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


@torch.inference_mode()
def validate(model, loader, device):
    model.eval()
    total_loss = 0.0
    probs_all = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        total_loss += F.cross_entropy(logits, y, reduction="sum")
        probs_all.append(F.softmax(logits, dim=1).cpu())
    return total_loss / len(loader.dataset), torch.cat(probs_all)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = MLP().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train_loader = DataLoader(NoisyDataset(), batch_size=32, shuffle=True, num_workers=2)
    val_loader = DataLoader(NoisyDataset(200, seed=1), batch_size=64)
    for epoch in range(5):
        train(model, train_loader, optimizer, device)
        val_loss, probs = validate(model, val_loader, device)
        print(epoch, float(val_loss), probs.shape)


if __name__ == "__main__":
    main()
