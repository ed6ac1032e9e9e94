import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from tqdm import tqdm

from metrics import test_psnr


def train_epoch(model, dataloader, optimizer, epoch, device):
    model.train()
    progress_bar = tqdm(enumerate(dataloader), total=len(dataloader))
    for i, (lr, hr) in progress_bar:
        optimizer.zero_grad()
        loss = F.l1_loss(model(lr.to(device)), hr.to(device))
        loss.backward()
        optimizer.step()
        progress_bar.set_description(f"[{epoch}][{i + 1}/{len(dataloader)}] loss {loss.item():.4f}")


class Trainer:
    def __init__(self, model, train_dataset, test_dataset, device):
        self.device = device
        self.model = model.to(device)
        self.train_dataloader = DataLoader(train_dataset, batch_size=16, shuffle=True, num_workers=4)  # ok
        self.test_dataloader = DataLoader(test_dataset, batch_size=1, shuffle=True, num_workers=4)  # expect: eval-loader-shuffled
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def run(self, epochs):
        best = 0.0
        for epoch in range(epochs):
            train_epoch(self.model, self.train_dataloader, self.optimizer, epoch, self.device)
            value = test_psnr(model=self.model, dataloader=self.test_dataloader, device=self.device)
            if value > best:
                best = value
                torch.save(self.model.state_dict(), "best.pth")
