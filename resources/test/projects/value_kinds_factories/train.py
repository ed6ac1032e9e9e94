import torch
import torch.nn as nn

from config import CONFIG
from helpers import get_data_loaders, get_model, get_optimizer, get_scheduler


@torch.no_grad()
def validate(model, loader, criterion, device):
    model.eval()
    total = 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        total += criterion(model(inputs), targets).item() * inputs.size(0)
    return total / len(loader.dataset)


def main(cfg):
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    train_loader, val_loader = get_data_loaders(cfg)
    model = get_model(cfg)
    model.to(device)  # ok: Module.to moves the model in place
    optimizer = get_optimizer(model, cfg)
    scheduler = get_scheduler(optimizer, cfg)
    criterion = nn.CrossEntropyLoss()

    best_loss = float("inf")
    best_state = None
    for epoch in range(cfg["epochs"]):
        model.train()
        for inputs, targets in train_loader:
            inputs.to(device)  # expect: discarded-tensor-op-result
            targets = targets.to(device)
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
        val_loss = validate(model, val_loader, criterion, device)
        scheduler.step()  # expect: plateau-scheduler-step-without-metric
        print(f"epoch {epoch}: val loss {val_loss:.4f}")
        if val_loss < best_loss:
            best_loss = val_loss
            best_state = model.state_dict()  # expect: best-state-dict-not-copied
    model.load_state_dict(best_state)
    torch.save(model.state_dict(), cfg["save_path"])


if __name__ == "__main__":
    main(CONFIG)
