import argparse

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from evaluation import validate
from losses import distillation_loss
from models import StudentNet, load_teacher


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data")
    p.add_argument("--teacher", required=True)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--lr", type=float, default=0.05)
    args = p.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    norm = transforms.Normalize((0.507, 0.487, 0.441), (0.267, 0.256, 0.276))
    train_set = datasets.CIFAR100(args.data, train=True, download=True, transform=transforms.Compose(
        [transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(), transforms.ToTensor(), norm]))
    val_set = datasets.CIFAR100(args.data, train=False, transform=transforms.Compose([transforms.ToTensor(), norm]))
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=512, num_workers=4)

    teacher = load_teacher(args.teacher, 100, device)
    student = StudentNet().to(device)
    optimizer = torch.optim.SGD(student.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    for epoch in range(args.epochs):
        student.train()
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            with torch.no_grad():
                teacher_logits = teacher(images)  # ok: frozen teacher, switched to eval mode by load_teacher
            loss = distillation_loss(student(images), teacher_logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: student val acc {validate(student, val_loader, device):.4f}")
    torch.save(student.state_dict(), "student.pt")


if __name__ == "__main__":
    main()
