import torch
from torchvision.models import resnet50


def load_teacher(path, num_classes, device):
    """A trained ResNet-50, frozen and in eval mode."""
    model = resnet50(num_classes=num_classes)
    model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    model.to(device)
    model.eval()
    model.requires_grad_(False)
    return model
