import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


def fit(train_loader, val_loader, epochs):
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    crit = nn.CrossEntropyLoss()
    best_acc = 0.0
    best_weights = None
    for epoch in range(epochs):
        for x, y in train_loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            opt.step()
            sched.step()  # expect: epoch-scheduler-stepped-per-batch
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum().item()  # expect: missing-eval-mode
        acc = correct / len(val_loader.dataset)
        if acc > best_acc:
            best_acc = acc
            best_weights = model.state_dict()  # expect: best-state-dict-not-copied
    model.load_state_dict(best_weights)
    return model
