import torch
import torch.nn as nn

from .backbone import ResNetStem, to_tensor


class HybridViT(nn.Module):
    def __init__(self, num_classes=10, dim=256):
        super().__init__()
        self.stem = ResNetStem()
        self.proj = nn.Conv2d(256, dim, kernel_size=1)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.proj(self.stem(x))
        return self.head(x.flatten(2).mean(-1))

    def load_from(self, weights):
        with torch.no_grad():
            self.proj.weight.copy_(to_tensor(weights["embedding/kernel"], conv=True))
            self.proj.bias.copy_(to_tensor(weights["embedding/bias"]))
            self.stem.root.weight.copy_(to_tensor(weights["conv_root/kernel"], conv=True))
            for bname, block in self.stem.body.named_children():
                for uname, unit in block.named_children():
                    unit.load_from(weights, n_block=bname, n_unit=uname)
