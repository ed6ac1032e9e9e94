import torch
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, dim, use_dropout):
        super().__init__()
        layers = [nn.Conv2d(dim, dim, 3, padding=1), nn.BatchNorm2d(dim), nn.ReLU(True)]
        if use_dropout:
            layers.append(nn.Dropout(0.5))
        layers += [nn.Conv2d(dim, dim, 3, padding=1), nn.BatchNorm2d(dim)]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.block(x)


class Generator(nn.Module):
    def __init__(self, channels=3, width=32, blocks=4, use_dropout=True):
        super().__init__()
        self.stem = nn.Conv2d(channels, width, 7, padding=3)
        self.body = nn.Sequential(*[ResBlock(width, use_dropout) for _ in range(blocks)])
        self.head = nn.Sequential(nn.Conv2d(width, channels, 7, padding=3), nn.Tanh())

    def forward(self, x):
        return self.head(self.body(self.stem(x)))


def init_net(net, gpu_ids):
    if gpu_ids:
        net.to(gpu_ids[0])
        net = torch.nn.DataParallel(net, gpu_ids)
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.normal_(m.weight, 0.0, 0.02)
    return net


def define_generator(opt):
    return init_net(Generator(use_dropout=not opt.no_dropout), opt.gpu_ids)
