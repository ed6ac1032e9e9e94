import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(16 * 32 * 32, 10)

    def forward(self, x):
        x = self.drop(self.conv(x).relu())
        return self.fc(x.flatten(1))
