import torch
import torch.nn as nn

from models import MLP

X = torch.load("data/x.pt")
y = torch.load("data/y.pt")
X_new = torch.load("data/x_new.pt")

model = MLP(8, 128, 1, p=0.2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(1000):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(X), y)
    loss.backward()
    optimizer.step()

# Monte Carlo dropout: dropout stays on to sample the predictive distribution.
samples = torch.stack([model(X_new) for _ in range(50)])
mean, std = samples.mean(0), samples.std(0)
print(mean[:5], std[:5])
