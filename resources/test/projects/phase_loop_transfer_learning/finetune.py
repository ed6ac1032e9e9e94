import torch
import torch.nn as nn
from torch.optim import lr_scheduler
from torchvision import datasets, transforms

from models import resnet_classifier
from trainer import train_model, train_model_managed

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
image_datasets = {x: datasets.ImageFolder(f"data/hymenoptera/{x}", tf) for x in ["train", "val"]}
dataloaders = {
    x: torch.utils.data.DataLoader(image_datasets[x], batch_size=4, shuffle=(x == "train"), num_workers=4)
    for x in ["train", "val"]
}
dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
criterion = nn.CrossEntropyLoss()

# Fine-tune the whole network.
model_ft = resnet_classifier(2).to(device)
optimizer = torch.optim.SGD(model_ft.parameters(), lr=0.001, momentum=0.9)
scheduler = lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
model_ft = train_model(model_ft, criterion, optimizer, scheduler, dataloaders, dataset_sizes, device)
torch.save(model_ft.state_dict(), "finetuned.pt")

# The backbone as a fixed feature extractor: frozen, then a new trainable head.
model_conv = resnet_classifier(2, freeze_backbone=True).to(device)
optimizer = torch.optim.SGD(model_conv.fc.parameters(), lr=0.001, momentum=0.9)
scheduler = lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
model_conv = train_model(model_conv, criterion, optimizer, scheduler, dataloaders, dataset_sizes, device)
torch.save(model_conv.state_dict(), "fixed_features.pt")

model_last = resnet_classifier(2).to(device)
model_last = train_model_managed(model_last, criterion, torch.optim.Adam(model_last.parameters()), dataloaders)
torch.save(model_last.state_dict(), "managed.pt")
