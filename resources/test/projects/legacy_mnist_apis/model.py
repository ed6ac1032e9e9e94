import torch.nn as nn
import torch.nn.functional as F


class AuxNet(nn.Module):
    """Conv trunk with a main classifier and an auxiliary classifier on the first block."""

    def __init__(self):
        super(AuxNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 20, 5)
        self.conv2 = nn.Conv2d(20, 50, 5)
        self.aux = nn.Linear(20 * 12 * 12, 10)
        self.fc1 = nn.Linear(50 * 4 * 4, 500)
        self.fc2 = nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        aux = self.aux(x.view(x.size(0), -1))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.view(x.size(0), -1)))
        return F.log_softmax(self.fc2(x), dim=1), F.log_softmax(aux, dim=1)
