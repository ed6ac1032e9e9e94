import os
import shutil

import torch


def save_checkpoint(state, is_best, output_dir, filename="checkpoint.pth.tar"):
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, filename)
    torch.save(state, path)
    if is_best:
        shutil.copyfile(path, os.path.join(output_dir, "model_best.pth.tar"))
