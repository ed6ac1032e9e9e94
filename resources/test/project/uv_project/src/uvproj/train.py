import torch
from accelerate import Accelerator
from uvproj.model import Block


def main():
    accelerator = Accelerator()
    model = Block()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    for _ in range(3):
        loss = model(torch.randn(4, 32)).sum()
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()
