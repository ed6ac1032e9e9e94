import torch


def forward_backward(model, batch, optimizer, accum_steps, device):
    """Run one micro-batch and accumulate its gradients. Returns the unscaled loss."""
    optimizer.zero_grad(set_to_none=True)
    batch = {k: v.to(device) for k, v in batch.items()}
    outputs = model(**batch)
    loss = outputs.loss / accum_steps
    loss.backward()
    return loss.item() * accum_steps


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        logits = model(**batch).logits
        correct += (logits.argmax(-1) == batch["labels"]).sum().item()
        total += batch["labels"].numel()
    model.train()
    return correct / total
