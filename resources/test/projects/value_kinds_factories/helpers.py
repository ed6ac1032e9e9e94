import torch
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def get_data_loaders(cfg):
    tf = transforms.Compose([transforms.Resize((224, 224)), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    train_set = datasets.ImageFolder(cfg["train_dir"], tf)
    val_set = datasets.ImageFolder(cfg["val_dir"], tf)
    train_loader = DataLoader(train_set, batch_size=cfg["batch_size"], shuffle=True, num_workers=4)
    val_loader = DataLoader(val_set, batch_size=cfg["batch_size"], shuffle=False, num_workers=4)
    return train_loader, val_loader


def get_model(cfg):
    model = models.densenet121(weights=models.DenseNet121_Weights.DEFAULT)
    model.classifier = torch.nn.Linear(model.classifier.in_features, cfg["num_classes"])
    return model


def get_optimizer(model, cfg):
    return torch.optim.Adam(model.parameters(), lr=cfg["lr"])


def get_scheduler(optimizer, cfg):
    return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.1, patience=cfg["patience"])
