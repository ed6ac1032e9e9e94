import lightning as L
import torch.nn as nn
import torch.nn.functional as F


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 10))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x.flatten(1)), y)
