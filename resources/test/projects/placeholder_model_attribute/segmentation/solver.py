import torch
import torch.nn.functional as F
from torch import optim

from .network import UNet


def dice(pred, target, eps=1e-6):
    inter = (pred * target).sum()
    return (2 * inter + eps) / (pred.sum() + target.sum() + eps)


class Solver:
    def __init__(self, config, train_loader, valid_loader):
        self.train_loader = train_loader
        self.valid_loader = valid_loader
        # Built by build_model() below.
        self.unet = None
        self.optimizer = None
        self.lr = config.lr
        self.num_epochs = config.num_epochs
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.build_model()

    def build_model(self):
        self.unet = UNet(in_ch=3, out_ch=1)
        self.optimizer = optim.Adam(self.unet.parameters(), self.lr)
        self.unet.to(self.device)

    def train(self):
        for epoch in range(self.num_epochs):
            self.unet.train(True)
            for images, masks in self.train_loader:
                images, masks = images.to(self.device), masks.to(self.device)
                loss = F.binary_cross_entropy_with_logits(self.unet(images), masks)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

            self.unet.eval()
            score = 0.0
            for images, masks in self.valid_loader:
                images, masks = images.to(self.device), masks.to(self.device)
                probs = torch.sigmoid(self.unet(images))  # expect: eval-without-no-grad
                score += dice(probs > 0.5, masks).item()
            print(f"epoch {epoch}: dice {score / len(self.valid_loader):.4f}")
