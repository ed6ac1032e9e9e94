from graphkit.dataset import NodeDataset
from graphkit.shield import load_payload

__all__ = ["NodeDataset", "load_payload"]
