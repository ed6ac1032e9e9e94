import argparse

import _init_paths
import torch
from torch.utils.data import DataLoader

from datasets.roi_features import RoIFeatures
from model.faster_rcnn.roi_head import RoIHead


def parse_args():
    parser = argparse.ArgumentParser(description='Test the RoI head of a Faster R-CNN network')
    parser.add_argument('--features', default='data/roi_features_test.pt')
    parser.add_argument('--load_name', default='models/roi_head.pth')
    return parser.parse_args()


if __name__ == '__main__':
    args = parse_args()
    head = RoIHead()
    head.load_state_dict(torch.load(args.load_name, weights_only=True))
    head.cuda()
    loader = DataLoader(RoIFeatures(args.features), batch_size=256, shuffle=False)
    correct = total = 0
    with torch.no_grad():
        for pooled, labels in loader:
            cls_prob = head(pooled.cuda())  # expect: missing-eval-mode
            correct += (cls_prob.argmax(1).cpu() == labels).sum().item()  # ok: scores are probabilities here
            total += labels.numel()
    print('accuracy: %.4f' % (correct / total))
