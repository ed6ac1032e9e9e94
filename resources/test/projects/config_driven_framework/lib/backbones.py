import torchvision


def get_backbone(name, weights=None):
    if name == "resnet50":
        return torchvision.models.resnet50(weights=weights)
    return torchvision.models.resnet18(weights=weights)
