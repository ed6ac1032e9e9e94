import torchvision.transforms as T
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder

IMAGE_SIZE = 64
MEAN_STD = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)


def faces_loader(root, batch_size):
    tfm = T.Compose([T.Resize(IMAGE_SIZE), T.CenterCrop(IMAGE_SIZE), T.ToTensor(), T.Normalize(*MEAN_STD)])
    return DataLoader(ImageFolder(root, transform=tfm), batch_size, shuffle=True, num_workers=3,
                      pin_memory=True, drop_last=True)
