"""Tools for benchmark maintainers: write a new dataset in the server's layout."""
import os
import os.path as osp

import torch


class DatasetSaver:
    def __init__(self, name, root="submission"):
        self.split_dir = osp.join(root, name, "split")

    def save_split(self, split_dict, split_name):
        os.makedirs(osp.join(self.split_dir, split_name), exist_ok=True)
        torch.save(split_dict, osp.join(self.split_dir, split_name, "split_dict.pt"))
