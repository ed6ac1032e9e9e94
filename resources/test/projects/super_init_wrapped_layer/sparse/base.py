import torch
import torch.nn as nn


class SparseWeightsBase(nn.Module):
    """Wraps a layer and keeps a fixed fraction of its weights at zero."""

    def __init__(self, module, sparsity):
        super().__init__()
        self.module = module
        self.sparsity = sparsity
        with torch.no_grad():
            self.rezero_weights()

    def forward(self, x):
        return self.module.forward(x)  # expect: call-forward-directly

    def rezero_weights(self):
        weight = self.module.weight
        k = int(self.sparsity * weight.numel())
        if k:
            idx = torch.randperm(weight.numel())[:k]
            weight.view(-1)[idx] = 0.0
