import torch
from src.models.net import Encoder


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Encoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(10):
        loss = model(torch.randn(8, 64, device=device)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), "checkpoints/encoder.pt")


if __name__ == "__main__":
    main()
