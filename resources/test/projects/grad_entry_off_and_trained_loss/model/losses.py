import torch.nn.functional as F


def sequence_loss(net, frames, labels):
    """The training loss over the frames of a clip: the trainer back-propagates it."""
    losses = {"total": 0.0}
    for t in range(frames.shape[1]):
        logits = net(frames[:, t])  # ok: the trainer differentiates the returned losses
        losses[f"ce_{t}"] = F.cross_entropy(logits, labels[:, t])
        losses["total"] = losses["total"] + losses[f"ce_{t}"]
    return losses


def clip_error(net, frames, labels):
    """Logged once per epoch."""
    val_losses = []
    for t in range(frames.shape[1]):
        logits = net(frames[:, t])  # expect: eval-without-no-grad, missing-eval-mode
        val_losses.append(F.cross_entropy(logits, labels[:, t]))
    return sum(val_losses) / len(val_losses)
