import torch
import torch.nn.functional as F
from torch import nn


class Meta(nn.Module):
    """A meta-learner: one forward is one meta-training step (inner adaptation, outer update)."""

    def __init__(self, net, meta_lr, update_lr):
        super().__init__()
        self.net = net
        self.update_lr = update_lr
        self.meta_optim = torch.optim.Adam(self.net.parameters(), lr=meta_lr)

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        loss = F.cross_entropy(self.net(x_spt), y_spt)
        grads = torch.autograd.grad(loss, list(self.net.parameters()))
        fast = [p - self.update_lr * g for p, g in zip(self.net.parameters(), grads)]
        loss_q = F.cross_entropy(self.net.functional(x_qry, fast), y_qry)
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()
        return (self.net.functional(x_qry, fast).argmax(1) == y_qry).float().mean().item()
