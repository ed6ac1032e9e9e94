import os.path as osp

import torch

from graphkit.url import download_url, extract_zip

BASE_URL = "https://data.example.org/graphs/"


class NodeDataset:
    """A node-classification dataset fetched from the benchmark server into `root`."""

    def __init__(self, name, root="dataset"):
        self.name = name
        self.root = osp.join(root, name)
        if not osp.exists(self.root):
            path = download_url(BASE_URL + name + ".zip", root)
            extract_zip(path, root)

    def get_idx_split(self, split_type="random"):
        path = osp.join(self.root, "split", split_type, "split_dict.pt")
        return torch.load(path, weights_only=False)  # expect: torch-load-without-weights-only
