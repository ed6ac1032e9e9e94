import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

from engine import evaluate, run_validation, train_epoch

device = "cuda" if torch.cuda.is_available() else "cpu"
tf = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
train_loader = DataLoader(datasets.ImageFolder("data/train", tf), batch_size=32, shuffle=True, num_workers=4)
val_loader = DataLoader(datasets.ImageFolder("data/val", tf), batch_size=64, num_workers=4)
test_loader = DataLoader(datasets.ImageFolder("data/test", tf), batch_size=64, num_workers=4)

model = models.resnet18(weights="IMAGENET1K_V1")
model.fc = nn.Linear(model.fc.in_features, 5)
model = model.to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)

for epoch in range(15):
    train_epoch(model, train_loader, optimizer, criterion, device)
    with torch.no_grad():
        val_acc = evaluate(model, val_loader, device)
        val_loss = run_validation(model, val_loader, criterion, device)
    print(f"epoch {epoch}: val acc {val_acc:.3f}, val loss {val_loss:.3f}")

torch.save(model.state_dict(), "resnet18_flowers.pth")
print(f"test accuracy: {evaluate(model, test_loader, device):.3f}")
