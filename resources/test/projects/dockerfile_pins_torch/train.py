import torch
import torch.nn as nn

model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
optimizer = torch.optim.Adam(model.parameters())
for step in range(100):
    x, y = torch.randn(32, 1, 28, 28), torch.randint(0, 10, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model, "digits.pt")  # expect: torch-save-whole-model
