import torch
import torch.nn.functional as F

from data import *
from model import *

EPOCHS = 20
device = "cuda" if torch.cuda.is_available() else "cpu"


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (wav, target) in enumerate(loader):
        wav, target = wav.to(device), target.to(device)
        output = model(wav)
        loss = F.nll_loss(output, target)  # expect: nll-loss-on-probabilities
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if batch_idx % 50 == 0:
            print(f"epoch {epoch} batch {batch_idx}/{len(loader)} loss {loss.item():.4f}")


@torch.no_grad()
def test(model, loader):
    model.eval()
    correct = 0
    for wav, target in loader:
        pred = model(wav.to(device)).argmax(dim=-1)  # ok: argmax of probabilities
        correct += (pred.cpu() == target).sum().item()
    return correct / len(loader.dataset)


if __name__ == "__main__":
    train_loader, test_loader = make_loaders("./speech_commands")
    model = KeywordSpotter(len(KEYWORDS)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.1)
    for epoch in range(1, EPOCHS + 1):
        train(model, train_loader, optimizer, epoch)
        print(f"test accuracy {test(model, test_loader):.4f}")
        scheduler.step()
