import pytorch_lightning as pl
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms


class CIFARDataModule(pl.LightningDataModule):
    def __init__(self, data_dir="data", batch_size=128, num_workers=4):
        super().__init__()
        self.data_dir = data_dir
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.5,) * 3)])

    def prepare_data(self):
        datasets.CIFAR10(self.data_dir, train=True, download=True)

    def setup(self, stage=None):
        full = datasets.CIFAR10(self.data_dir, train=True, transform=self.transform)
        self.train_set, self.val_set = random_split(full, [45000, 5000])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, num_workers=self.num_workers)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size, num_workers=self.num_workers)
