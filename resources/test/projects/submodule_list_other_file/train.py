import torch
import torch.nn as nn

from asr.models import SpeechModel


def main():
    torch.manual_seed(0)
    model = SpeechModel(80, 256, 3, 30)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    for _ in range(10):
        x = torch.randn(4, 50, 80)
        y = torch.randint(0, 30, (4, 50))
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out.reshape(-1, 30), y.reshape(-1))
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
