import torch
from torchvision.datasets import ImageFolder
from torchvision.transforms import ToTensor

from trainer import Trainer


class TinySR(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.Conv2d(64, 3 * 4, 3, padding=1),
            torch.nn.PixelShuffle(2),
        )

    def forward(self, x):
        return self.body(x)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = ImageFolder("data/train", transform=ToTensor())
    test_set = ImageFolder("data/test", transform=ToTensor())
    Trainer(TinySR(), train_set, test_set, device).run(100)
