import torch
import torchvision


def build(num_classes: int):
    backbone = torchvision.models.resnet50(pretrained=True)
    backbone.fc = torch.nn.Linear(backbone.fc.in_features, num_classes)
    detector = torchvision.models.detection.fasterrcnn_resnet50_fpn(pretrained=False, pretrained_backbone=True)
    scratch = torchvision.models.vgg16(False)
    return backbone, detector, scratch
