from .base import SparseWeightsBase


class SparseWeights(SparseWeightsBase):
    def __init__(self, module, sparsity=0.5):
        super().__init__(module, sparsity)


class SparseWeightsConv(SparseWeightsBase):
    def __init__(self, module, sparsity=0.5):
        super(SparseWeightsConv, self).__init__(module, sparsity)

    def forward(self, x):
        return self.module(x)  # ok: calls the wrapped layer itself
