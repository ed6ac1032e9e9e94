import torch
import torch.nn as nn
from torchvision import models

from finetune_utils import freeze, set_option, unfreeze


class Settings:
    requires_grad = True


def build():
    backbone = models.resnet18(weights=None)
    freeze(backbone)
    head = nn.Linear(512, 10)
    unfreeze(head)
    set_option(Settings(), False)
    return nn.Sequential(backbone, head)


if __name__ == "__main__":
    net = build()
    print(sum(p.numel() for p in net.parameters() if p.requires_grad))
