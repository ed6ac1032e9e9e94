import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast  # expect: deprecated-cuda-amp-autocast


def train(model, loader, optimizer, epochs=1):
    scaler = GradScaler()  # expect: deprecated-cuda-amp-autocast
    model.cuda()
    for _ in range(epochs):
        for images, target in loader:
            images = images.cuda(non_blocking=True)
            target = target.cuda(non_blocking=True)
            optimizer.zero_grad()
            with autocast():  # expect: deprecated-cuda-amp-autocast
                output = model(images)
                loss = nn.functional.cross_entropy(output, target)
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: clip-grad-norm-amp-without-unscale
            scaler.step(optimizer)
            scaler.update()


def preprocess(batch):
    x = torch.as_tensor(batch)
    x.cuda()  # expect: discarded-tensor-op-result
    return x
