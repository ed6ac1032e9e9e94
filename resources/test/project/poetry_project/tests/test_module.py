import torch
from mypkg.module import Classifier


def test_forward():
    assert Classifier().net(torch.zeros(1, 784)).shape == (1, 10)
