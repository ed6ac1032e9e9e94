import torch
import torch.nn.functional as F

accumulation_steps = 8


def evaluate(model, loader):
    model.eval()
    hits = 0
    with torch.no_grad():
        for x, y in loader:
            hits += (model(x).argmax(-1) == y).sum().item()
    return hits / len(loader.dataset)


def train(model, loader, val_loader, optimizer, epochs=3):
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()  # expect: zero-grad-misplaced
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if (step + 1) % accumulation_steps == 0:
                optimizer.step()
            if step % 1000 == 0:
                evaluate(model, val_loader)  # expect: missing-train-after-eval


def benchmark(batch):
    import time

    import torchvision

    model = torchvision.models.resnet50().cuda().eval()
    batch = batch.cuda()
    with torch.inference_mode():
        start = time.perf_counter()
        for _ in range(100):
            model(batch)
        elapsed = time.perf_counter() - start  # expect: cuda-timing-without-synchronize
    return elapsed / 100


def train_accumulating(model, loader, optimizer):
    model.train()
    optimizer.zero_grad()
    for step, (x, y) in enumerate(loader):
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # expect: grad-accum-loss-not-scaled
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
