import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

ACCUM_STEPS = 4

model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 1))
device = "cuda" if torch.cuda.is_available() else "cpu"
model.to(device)
opt = optim.AdamW(model.parameters(), lr=3e-4)
sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-4, total_steps=1000)
loss_fn = nn.MSELoss()

data = TensorDataset(torch.randn(4096, 128), torch.randn(4096, 1))
loader = DataLoader(data, batch_size=32, shuffle=True)

losses = []
for epoch in range(3):
    opt.zero_grad()
    for i, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        pred = model(x)
        loss = loss_fn(pred, y) / ACCUM_STEPS
        loss.backward()
        if (i + 1) % ACCUM_STEPS == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
        losses.append(loss.detach().item())
