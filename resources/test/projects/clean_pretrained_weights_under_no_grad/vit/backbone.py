"""ResNet stem whose blocks copy pretrained weights into themselves.

The copies below are not under torch.no_grad() here: the only caller, HybridViT.load_from in
transformer.py, runs them inside `with torch.no_grad():` while walking named_children(), so
autograd is off when they execute.
"""
import torch
import torch.nn as nn


def to_tensor(array, conv=False):
    if conv:
        array = array.transpose([3, 2, 0, 1])
    return torch.from_numpy(array)


class Bottleneck(nn.Module):
    def __init__(self, cin, cout, cmid, stride=1):
        super().__init__()
        self.gn1 = nn.GroupNorm(32, cmid)
        self.conv1 = nn.Conv2d(cin, cmid, kernel_size=1, bias=False)
        self.gn2 = nn.GroupNorm(32, cmid)
        self.conv2 = nn.Conv2d(cmid, cmid, kernel_size=3, stride=stride, padding=1, bias=False)
        self.gn3 = nn.GroupNorm(32, cout)
        self.conv3 = nn.Conv2d(cmid, cout, kernel_size=1, bias=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.relu(self.gn1(self.conv1(x)))
        y = self.relu(self.gn2(self.conv2(y)))
        y = self.gn3(self.conv3(y))
        return self.relu(x + y)

    def load_from(self, weights, n_block, n_unit):
        prefix = f"{n_block}/{n_unit}/"
        self.conv1.weight.copy_(to_tensor(weights[prefix + "conv1/kernel"], conv=True))  # ok: caller runs under no_grad
        self.conv2.weight.copy_(to_tensor(weights[prefix + "conv2/kernel"], conv=True))  # ok
        self.conv3.weight.copy_(to_tensor(weights[prefix + "conv3/kernel"], conv=True))  # ok
        self.gn1.weight.copy_(to_tensor(weights[prefix + "gn1/scale"]).view(-1))  # ok
        self.gn1.bias.copy_(to_tensor(weights[prefix + "gn1/bias"]).view(-1))  # ok


class ResNetStem(nn.Module):
    def __init__(self, width=64, units=(3, 4)):
        super().__init__()
        self.root = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.body = nn.Sequential()
        cin = width
        for i, n in enumerate(units, start=1):
            block = nn.Sequential()
            for j in range(1, n + 1):
                block.add_module(f"unit{j}", Bottleneck(cin, width * 4, width))
                cin = width * 4
            self.body.add_module(f"block{i}", block)

    def forward(self, x):
        return self.body(self.root(x))
