"""Fixture models for `torchvet summary` (parsed statically; gen_reference.py runs them with torch)."""

import math
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import nn as tnn
from torch.nn import Linear, Conv2d as C2

HIDDEN = 64
DIMS = [32, 64, 16]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 64)
        self.fc2 = nn.Linear(64, 10)
        self.dropout = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc2(self.dropout(torch.relu(self.fc1(x))))


class CustomModel(nn.Module):
    """Sizes only known at run time."""

    def __init__(self, input_dim: int, hidden_dim: int, output_dim: int):
        super().__init__()
        self.fc1 = nn.Linear(input_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 10)
        self.dropout = nn.Dropout(0.5)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int = 16):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + x)


class Stacked(tnn.Module):
    """Nested project classes built in a loop, aliased imports, module-level constants."""

    def __init__(self, depth=3, width=HIDDEN):
        super().__init__()
        self.stem = C2(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        blocks = []
        for _ in range(depth):
            blocks.append(ResidualBlock(width))
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = Linear(width, 10)


class DynamicModel(nn.Module):
    def __init__(self, layer_dims=(32, 64, 64, 10)):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(layer_dims[i], layer_dims[i + 1]) for i in range(len(layer_dims) - 1)]
        )
        self.norms = nn.ModuleList()
        for d in layer_dims[1:-1]:
            self.norms.append(nn.LayerNorm(d))


class ZipMLP(nn.Module):
    def __init__(self, dims=DIMS, act=nn.GELU):
        super().__init__()
        layers = OrderedDict()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers[f"fc{i}"] = nn.Linear(a, b)
            layers[f"act{i}"] = act()
        self.mlp = nn.Sequential(layers)


class TinyTransformer(nn.Module):
    def __init__(self, vocab_size=1000, d_model=128, nhead=4, num_layers=2, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers)
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len), 1), persistent=False)
        self.register_buffer("scale", torch.tensor(math.sqrt(d_model)))


class Recurrent(nn.Module):
    def __init__(self, bidirectional=True):
        super().__init__()
        self.lstm = nn.LSTM(100, 128, num_layers=2, bidirectional=bidirectional, batch_first=True)
        self.gru = nn.GRU(256 if bidirectional else 128, 64)
        self.cell = nn.LSTMCell(64, 32)
        self.out = nn.Linear(32, 5)


class Heads(nn.Module):
    def __init__(self, in_features=64, tasks=("cls", "reg")):
        super().__init__()
        self.trunk = nn.Sequential(OrderedDict([("fc", nn.Linear(in_features, 32)), ("act", nn.ReLU())]))
        self.heads = nn.ModuleDict({t: nn.Linear(32, 2 if t == "cls" else 1) for t in tasks})
        self.weights = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in tasks])
        self.attn = nn.MultiheadAttention(32, 4, kdim=16, vdim=8, batch_first=True)


class Conditional(nn.Module):
    def __init__(self, channels, use_bn=True, dropout=0.0):
        super().__init__()
        self.conv = nn.Conv1d(channels, 32, 5)
        if use_bn:
            self.bn = nn.BatchNorm1d(32)
        else:
            self.bn = nn.Identity()
        if dropout > 0:
            self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([nn.Linear(32, 32) for _ in range(channels)])
        self.lazy = nn.LazyLinear(10)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample


class MiniResNet(nn.Module):
    """ResNet-style: a helper method that mutates self.inplanes, class attributes."""

    def __init__(self, block=Bottleneck, layers=(2, 1), num_classes=10):
        super().__init__()
        self.inplanes = 16
        self.conv1 = nn.Conv2d(3, 16, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._make_layer(block, 16, layers[0])
        self.layer2 = self._make_layer(block, 32, layers[1], stride=2)
        self.fc = nn.Linear(32 * block.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)


class Base(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.ones(dim))


class Derived(Base):
    def __init__(self):
        super().__init__(dim=12)
        self.extra = nn.Bilinear(12, 12, 3)
        self.act = nn.PReLU(3)


class Misc(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn = nn.GroupNorm(4, 16)
        self.inorm = nn.InstanceNorm2d(16, affine=True, track_running_stats=True)
        self.up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.bag = nn.EmbeddingBag(500, 24, mode="mean")
        self.rnn = nn.RNN(24, 24, 2, "relu")
        self.dec = nn.TransformerDecoderLayer(24, 4, 48, batch_first=True)
        self.loss = nn.CrossEntropyLoss(weight=torch.ones(10))
        self.ema = nn.Buffer(torch.zeros(4, 2))
        self.tmp = nn.Buffer(torch.ones(3), persistent=False)
