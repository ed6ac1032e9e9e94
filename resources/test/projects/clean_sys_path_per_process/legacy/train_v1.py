import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'v1_lib'))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from model.head import ClsHead  # noqa: E402


def train(loader, epochs=10):
    head = ClsHead().cuda()
    criterion = nn.NLLLoss()  # ok: the v1 head returns log-probabilities
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(epochs):
        for feats, labels in loader:
            loss = criterion(head(feats.cuda()), labels.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(head.state_dict(), 'head_v1.pth')
