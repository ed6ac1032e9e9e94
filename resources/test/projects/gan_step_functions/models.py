import torch.nn as nn


def build_discriminator(channels=3):
    return nn.Sequential(
        nn.Conv2d(channels, 64, kernel_size=4, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(64, 128, kernel_size=4, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(128),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(128, 256, kernel_size=4, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(256),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(256, 1, kernel_size=8, stride=1, padding=0, bias=False),
        nn.Flatten(),
        nn.Sigmoid(),
    )


def build_generator(latent_size=128, channels=3):
    return nn.Sequential(
        nn.ConvTranspose2d(latent_size, 256, kernel_size=8, stride=1, padding=0, bias=False),
        nn.BatchNorm2d(256),
        nn.ReLU(True),
        nn.ConvTranspose2d(256, 128, kernel_size=4, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(128),
        nn.ReLU(True),
        nn.ConvTranspose2d(128, 64, kernel_size=4, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(True),
        nn.ConvTranspose2d(64, channels, kernel_size=4, stride=2, padding=1, bias=False),
        nn.Tanh(),
    )
