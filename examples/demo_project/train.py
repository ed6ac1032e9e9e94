"""Training script for the demo classifier."""
import argparse

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, TensorDataset

from model import Classifier


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()

    device = "cuda" if torch.cuda.is_available else "cpu"
    model = Classifier().to(device)
    if args.resume:
        model.load_state_dict(torch.load(args.resume), strict=False)

    data = TensorDataset(torch.randn(512, 784), torch.randint(0, 10, (512,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, sampler=None, persistent_workers=True)
    criterion = nn.CrossEntropyLoss
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-2)
    scaler = GradScaler()
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)

    for epoch in range(10):
        model.train()
        running = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            opt.zero_grad(set_to_none=False)
            with autocast():
                loss = criterion()(model(x), y)
                scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            running += loss
            torch.cuda.empty_cache()
        print(f"epoch {epoch}: loss {running / len(loader):.4f}")
        model.eval
        sched.step()
        torch.save(model, "model.pt")


if __name__ == "__main__":
    main()
