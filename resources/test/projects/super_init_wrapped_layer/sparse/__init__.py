from .modules import SparseWeights, SparseWeightsConv
