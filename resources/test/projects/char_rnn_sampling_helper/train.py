import torch
from torch import nn

from model import CharRNN


def train(net, batches, epochs=10, lr=1e-3, clip=5):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    net.train()
    for _ in range(epochs):
        h = None
        for x, y in batches:
            if h is not None:
                h = tuple(each.detach() for each in h)
            opt.zero_grad()
            out, h = net(x, h)
            loss = criterion(out, y.view(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), clip)
            opt.step()
    torch.save(net.state_dict(), "char_rnn.pt")


if __name__ == "__main__":
    net = CharRNN(tuple("abcdefghijklmnopqrstuvwxyz "))
    train(net, [])
