import _init_paths
import torch
import torch.nn as nn

from model.head import ClsHead


def train(loader, epochs=10):
    head = ClsHead().cuda()
    criterion = nn.CrossEntropyLoss()  # ok: lib's head returns logits
    optimizer = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(epochs):
        head.train()
        for feats, labels in loader:
            loss = criterion(head(feats.cuda()), labels.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(head.state_dict(), 'head.pth')
    return head
