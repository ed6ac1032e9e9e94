import pytest
import torch


@pytest.fixture
def batch():
    torch.manual_seed(0)
    return torch.randn(8, 1, 28, 28), torch.randint(0, 10, (8,))
