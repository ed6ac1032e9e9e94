import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from models import VAE
from trainer import Trainer


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = datasets.FashionMNIST("data", train=True, download=True, transform=transforms.ToTensor())
    test_set = datasets.FashionMNIST("data", train=False, transform=transforms.ToTensor())
    train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
    test_loader = DataLoader(test_set, batch_size=128)
    model = VAE(latent_dim=10).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = Trainer(model, optimizer, device)
    for epoch in range(10):
        train_loss = trainer.train_epoch(train_loader, beta=4.0)
        test_loss = trainer.evaluate(test_loader)
        print(f"epoch {epoch}: train {train_loss:.2f} test {test_loss:.2f}")
    torch.save(model.state_dict(), "vae.pt")


if __name__ == "__main__":
    main()
