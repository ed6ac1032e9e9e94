import argparse

import _init_paths
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from datasets.roi_features import RoIFeatures
from model.faster_rcnn.roi_head import RoIHead
from model.utils.config import cfg


def parse_args():
    parser = argparse.ArgumentParser(description='Train the RoI head of a Faster R-CNN network')
    parser.add_argument('--features', default='data/roi_features_trainval.pt')
    parser.add_argument('--epochs', type=int, default=20)
    parser.add_argument('--save_dir', default='models')
    return parser.parse_args()


def train(args):
    dataset = RoIFeatures(args.features)
    loader = DataLoader(dataset, batch_size=cfg.TRAIN.BATCH_SIZE, shuffle=True, num_workers=4)
    head = RoIHead().cuda()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(head.parameters(), lr=cfg.TRAIN.LEARNING_RATE, momentum=cfg.TRAIN.MOMENTUM)
    for epoch in range(args.epochs):
        head.train()
        for pooled, labels in loader:
            pooled, labels = pooled.cuda(), labels.cuda()
            cls_prob = head(pooled)
            loss = criterion(cls_prob, labels)  # expect: cross-entropy-after-softmax
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print('epoch %d loss %.4f' % (epoch, loss.item()))
    torch.save(head.state_dict(), '%s/roi_head.pth' % args.save_dir)


if __name__ == '__main__':
    train(parse_args())
