"""Paths and the model loader shared by the scripts."""
import os

import torch
from torchsummary import summary
from torchvision import models

base_dir = os.path.dirname(os.path.abspath(__file__))
path_state_dict = os.path.join(base_dir, "..", "..", "data", "alexnet_state_dict.pth")
device = "cuda" if torch.cuda.is_available() else "cpu"


def load_model(path, vis_model=False):
    """AlexNet with the trained weights, ready for inference."""
    model = models.alexnet()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model = model.to(device)
    model.eval()
    if vis_model:
        summary(model, (3, 224, 224))
    return model


def load_detector(num_classes):
    """A Faster R-CNN with a new box predictor for our classes."""
    detector = models.detection.fasterrcnn_resnet50_fpn(weights="DEFAULT")
    in_features = detector.roi_heads.box_predictor.cls_score.in_features
    detector.roi_heads.box_predictor = models.detection.faster_rcnn.FastRCNNPredictor(
        in_features, num_classes
    )
    return detector.to(device)
