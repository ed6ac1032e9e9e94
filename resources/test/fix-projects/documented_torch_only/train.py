import torch
import torchvision


def train_one_epoch(model, loader, optimizer, scaler):
    model.train()
    for images, targets in loader:
        images, targets = images.cuda(), targets.cuda()
        optimizer.zero_grad()
        with torch.cuda.amp.autocast():
            loss = torch.nn.functional.cross_entropy(model(images), targets)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


def main():
    model = torchvision.models.resnet18(num_classes=10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler()
    loader = torch.utils.data.DataLoader(
        torchvision.datasets.FakeData(transform=torchvision.transforms.ToTensor()),
        batch_size=32,
        shuffle=True,
    )
    for _ in range(10):
        train_one_epoch(model, loader, optimizer, scaler)


if __name__ == "__main__":
    main()
