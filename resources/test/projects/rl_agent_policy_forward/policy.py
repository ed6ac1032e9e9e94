import torch
from torch import nn


class GaussianPolicy(nn.Module):
    def __init__(self, n_inputs, hidden, n_actions):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_inputs, hidden), nn.ReLU())
        self.mean = nn.Linear(hidden, n_actions)
        self.log_std = nn.Linear(hidden, n_actions)

    def forward(self, state):
        h = self.body(state)
        return self.mean(h), self.log_std(h).clamp(-20, 2).exp()


class SquashedPolicy(nn.Module):
    """Wraps a policy and hands every call on to it."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args, **kwargs):
        mean, std = self.inner.forward(*args, **kwargs)  # ok: delegation from forward
        return torch.tanh(mean), std
