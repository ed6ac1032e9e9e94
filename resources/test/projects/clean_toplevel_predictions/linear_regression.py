import numpy as np
import torch
import torch.nn as nn

x = np.linspace(0, 10, 100, dtype=np.float32).reshape(-1, 1)
y = 3 * x + 2 + np.random.randn(100, 1).astype(np.float32)
inputs, targets = torch.from_numpy(x), torch.from_numpy(y)

model = nn.Linear(1, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(500):
    optimizer.zero_grad()
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()

predicted = model(inputs).detach().numpy()
print(predicted[:5])
