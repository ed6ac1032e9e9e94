import torch
import torch.nn.functional as F

from models import Net


def test_output_is_log_probabilities(batch):
    images, _ = batch
    model = Net()
    with torch.no_grad():
        out = model(images)  # ok: test code exercises the model in any mode
    assert out.shape == (8, 10)
    assert torch.allclose(out.exp().sum(dim=1), torch.ones(8), atol=1e-5)


def test_dropout_is_active_in_train_mode(batch):
    images, _ = batch
    model = Net(p_drop=0.5)
    model.train()
    with torch.no_grad():
        a = model(images)  # ok
        b = model(images)  # ok
    assert not torch.allclose(a, b)


def test_one_step_reduces_loss(batch):
    images, labels = batch
    model = Net(p_drop=0.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = F.nll_loss(model(images), labels)
    opt.zero_grad()
    before.backward()
    opt.step()
    after = F.nll_loss(model(images), labels)
    assert after.item() < before.item()
