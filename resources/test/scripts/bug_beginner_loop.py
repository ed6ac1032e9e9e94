import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 3)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        return F.softmax(self.fc2(h), dim=1)


device = torch.device("cuda")
model = Classifier().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
criterion = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(torch.randn(512, 20), torch.randint(0, 3, (512,))), batch_size=32)

total_loss = 0
for epoch in range(10):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        out = model(x)
        loss = criterion(out, y)  # expect: cross-entropy-after-softmax
        loss.backward()
        optimizer.step()  # expect: missing-zero-grad
        total_loss += loss  # expect: accumulate-loss-tensor
    print(epoch, total_loss)
