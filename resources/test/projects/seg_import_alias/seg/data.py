import os

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset


class SegFolder(Dataset):
    """images/<id>.jpg with masks/<id>.png (class index per pixel, 255 = ignore)."""

    def __init__(self, root, split, size=256):
        with open(os.path.join(root, f"{split}.txt")) as f:
            self.ids = [line.strip() for line in f if line.strip()]
        self.root = root
        self.size = size

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        name = self.ids[i]
        img = Image.open(os.path.join(self.root, "images", name + ".jpg")).convert("RGB")
        mask = Image.open(os.path.join(self.root, "masks", name + ".png"))
        img = img.resize((self.size, self.size), Image.BILINEAR)
        mask = mask.resize((self.size, self.size), Image.NEAREST)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        y = torch.from_numpy(np.asarray(mask, dtype=np.int64))
        return x, y
