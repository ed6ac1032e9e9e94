import torch

from segmentation.losses import LogitFocalLoss, SoftDiceLoss, WeightedFocalLoss
from segmentation.model import SpoofNet


def train(loader, epochs=10):
    model = SpoofNet()
    focal = WeightedFocalLoss()
    dice = SoftDiceLoss()
    logit_focal = LogitFocalLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    model.train()
    for _ in range(epochs):
        for images, masks in loader:
            probs, score_map = model(images)
            loss = focal(probs, masks) + dice(probs, masks) + logit_focal(score_map, masks)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model


if __name__ == "__main__":
    train([])
