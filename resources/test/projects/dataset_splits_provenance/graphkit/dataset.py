import os.path as osp

import torch

from graphkit.url import download_url, extract_zip

BASE_URL = "https://data.example.org/graphs/"


class NodeDataset:
    """A node-classification dataset fetched from the benchmark server into `root`."""

    def __init__(self, name, root="dataset"):
        self.name = name
        self.original_root = root
        self.root = osp.join(root, name)
        if not osp.exists(self.root):
            self.download()

    def get_idx_split(self, split_type="random"):
        path = osp.join(self.root, "split", split_type, "split_dict.pt")
        return torch.load(path, weights_only=False)  # expect: torch-load-without-weights-only

    def download(self):
        path = download_url(BASE_URL + self.name + ".zip", self.original_root)
        extract_zip(path, self.original_root)
