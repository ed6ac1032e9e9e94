"""Fine-tune on every GPU, keep the best weights, test them: the wrapper is moved after it is
built, and the best checkpoint goes back into the same wrapper."""
import torch
import torch.nn as nn

from model import Model


def finetune(train_loader, val_loader, device, epochs=3):
    model = Model(num_class=10)
    model = nn.DataParallel(model)
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    criterion = nn.CrossEntropyLoss()
    best = float("inf")
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(criterion(model(x.to(device)), y.to(device)).item() for x, y in val_loader)
        if val < best:
            best = val
            torch.save(model.state_dict(), "saved_weights.pt")  # ok: loaded into the wrapper below
    path = "saved_weights.pt"
    model.load_state_dict(torch.load(path))
    return model
