import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms

from engine import train_one_epoch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--accumulation-steps", type=int, default=4)
    parser.add_argument("--amp", action="store_true")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tf = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])
    train_set = datasets.ImageFolder(f"{args.data}/train", transform=tf)
    loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=4)

    model = models.resnet18(num_classes=len(train_set.classes)).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
    scaler = torch.amp.GradScaler("cuda") if args.amp else None

    for epoch in range(args.epochs):
        loss = train_one_epoch(
            model=model,
            criterion=criterion,
            loader=loader,
            optimizer=optimizer,
            device=device,
            epoch=epoch,
            accumulation_steps=args.accumulation_steps,
            scaler=scaler,
        )
        lr_scheduler.step()
        print(f"epoch {epoch}: loss {loss:.4f}")
        torch.save(model.state_dict(), "last.pth")


if __name__ == "__main__":
    main()
