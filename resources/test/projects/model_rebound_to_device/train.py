import argparse

import torch

from engine import HeadTrainer, accuracy, train_epoch
from models import Classifier, LogitHead


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.utils.data.TensorDataset(torch.randn(512, 32), torch.randint(0, 10, (512,)))
    loader = torch.utils.data.DataLoader(data, batch_size=64, shuffle=True)
    val_loader = torch.utils.data.DataLoader(data, batch_size=128, shuffle=False)

    model = Classifier()
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        train_epoch(model, loader, optimizer, device)
        print(epoch, accuracy(model, val_loader, device))

    head = LogitHead()
    head = head.cuda() if torch.cuda.is_available() else head
    HeadTrainer(head, device).fit(loader)


if __name__ == "__main__":
    main()
