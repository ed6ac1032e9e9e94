import os

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from tqdm import tqdm

import config
from models import build_model


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    weights_tf = transforms.Compose([
        transforms.RandomResizedCrop(config.IMAGE_SIZE),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    train_set = datasets.ImageFolder(os.path.join(config.DATA_ROOT, "train"), weights_tf)
    loader = DataLoader(train_set, batch_size=config.BATCH_SIZE, shuffle=True, num_workers=4)

    model = build_model(len(train_set.classes)).to(device)
    model.class_names = train_set.classes
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.LR)
    for epoch in range(config.EPOCHS):
        model.train()
        for images, labels in tqdm(loader, desc=f"epoch {epoch}"):
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()

    os.makedirs(os.path.dirname(config.MODEL_PATH), exist_ok=True)
    torch.save(model, config.MODEL_PATH)  # expect: torch-save-whole-model


if __name__ == "__main__":
    main()
