import argparse

import torch

from data import PointClouds
from model import PointSegNet

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
opt = parser.parse_args()

points, labels = PointClouds("test")[0]
classifier = PointSegNet(k=4)
classifier.load_state_dict(torch.load(opt.model, map_location="cpu", weights_only=True))
classifier.eval()
print(classifier(points.unsqueeze(0)).argmax(2))  # expect: eval-without-no-grad
