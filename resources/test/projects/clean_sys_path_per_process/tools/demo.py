import os.path as osp
import sys

import torch

sys.path.insert(0, osp.join(osp.dirname(__file__), '..', 'build', 'lib'))  # ok: made by setup.py

from roi_align import roi_align  # noqa: E402


def pool(features, boxes):
    return roi_align(features, boxes, output_size=7)


if __name__ == '__main__':
    feats = torch.randn(1, 256, 50, 50)
    print(pool(feats, torch.tensor([[0, 0, 0, 10, 10]], dtype=torch.float)).shape)
