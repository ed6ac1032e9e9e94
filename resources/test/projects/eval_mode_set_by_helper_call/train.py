import torch
from torch.utils.data import DataLoader

from vision.engine import count_hits, evaluate, train_one_epoch
from vision.models import FlowerNet
from vision.plots import plot_class_preds


def main(train_set, val_set, class_names, epochs=10):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = FlowerNet(num_classes=len(class_names)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=32)
    images, labels = next(iter(val_loader))
    for epoch in range(epochs):
        loss = train_one_epoch(model, optimizer, train_loader, device)
        acc = evaluate(model=model, data_loader=val_loader, device=device)
        fig = plot_class_preds(net=model, images=images.to(device), labels=labels, class_names=class_names)
        fig.savefig(f"preds_{epoch}.png")
        print(epoch, loss, acc, count_hits(model, val_loader, device))
        torch.save(model.state_dict(), "flowers.pth")
