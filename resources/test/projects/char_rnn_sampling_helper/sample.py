import numpy as np
import torch
import torch.nn.functional as F

from model import CharRNN


def one_hot(index, n):
    x = torch.zeros(1, 1, n)
    x[0, 0, index] = 1.0
    return x


def predict(net, char, h=None, top_k=5):
    """The next character and the hidden state, which the caller feeds back."""
    x = one_hot(net.char2int[char], len(net.chars))
    out, h = net(x, h)  # expect: eval-without-no-grad
    p = F.softmax(out, dim=1).data
    p, top = p.topk(top_k)
    choice = np.random.choice(top.numpy().squeeze(), p=(p / p.sum()).numpy().squeeze())
    return net.chars[choice], h


def sample(net, size, prime="the"):
    net.eval()
    h = None
    chars = list(prime)
    for ch in prime:
        char, h = predict(net, ch, h)
    chars.append(char)
    for _ in range(size):
        char, h = predict(net, chars[-1], h)
        chars.append(char)
    return "".join(chars)


def predict_logits(net, x, h=None):
    """A look-alike: the training script below differentiates what it returns."""
    out, _ = net(x, h)
    return out


if __name__ == "__main__":
    net = CharRNN(tuple("abcdefghijklmnopqrstuvwxyz "))
    net.load_state_dict(torch.load("char_rnn.pt", weights_only=True))
    print(sample(net, 200))
