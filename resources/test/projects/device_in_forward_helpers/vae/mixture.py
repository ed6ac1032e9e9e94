import torch
import torch.nn.functional as F


def mixture_log_likelihood(x, logits, means):
    x = x.unsqueeze(-1) + torch.zeros(logits.shape[:-1] + (1,)).cuda()  # expect: hardcoded-device-in-forward
    log_probs = F.log_softmax(logits, dim=-1) - (x - means) ** 2
    return torch.logsumexp(log_probs, dim=-1).sum()


def pinned_buffer(shape):
    # ok: forward calls this only for inputs on the GPU
    return torch.empty(shape).cuda().pin_memory()
