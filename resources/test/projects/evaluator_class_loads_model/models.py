import torch
import torch.nn as nn
from torchvision.models import resnet18


def get_model(lr=0.01):
    model = resnet18(weights=None)
    model.fc = nn.Sequential(nn.Linear(512, 128), nn.ReLU(), nn.Dropout(0.4), nn.Linear(128, 1), nn.Sigmoid())
    loss_fn = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return model, loss_fn, optimizer
