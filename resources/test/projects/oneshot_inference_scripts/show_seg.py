import argparse

import numpy as np
import torch

from data import PointClouds
from model import PointSegNet

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True, help="weights written by train.py")
parser.add_argument("--idx", type=int, default=0)
opt = parser.parse_args()

points, labels = PointClouds("test")[opt.idx]
classifier = PointSegNet(k=4)
classifier.load_state_dict(torch.load(opt.model, map_location="cpu", weights_only=True))

pred = classifier(points.unsqueeze(0))  # expect: missing-eval-mode
choice = pred.argmax(2)[0]
print("agreement", np.mean(choice.numpy() == labels.numpy()))
