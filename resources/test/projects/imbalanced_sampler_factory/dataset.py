import os

import pandas as pd
import torch
from PIL import Image
from torch.utils.data import Dataset


class SkinLesions(Dataset):
    """metadata.csv with columns image_id,dx; images in <root>/images/<image_id>.jpg."""

    CLASSES = ["akiec", "bcc", "bkl", "df", "mel", "nv", "vasc"]

    def __init__(self, root, split, transform=None):
        meta = pd.read_csv(os.path.join(root, f"{split}.csv"))
        self.paths = [os.path.join(root, "images", f"{i}.jpg") for i in meta["image_id"]]
        self.targets = [self.CLASSES.index(d) for d in meta["dx"]]
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, idx):
        img = Image.open(self.paths[idx]).convert("RGB")
        if self.transform is not None:
            img = self.transform(img)
        return img, torch.tensor(self.targets[idx])
