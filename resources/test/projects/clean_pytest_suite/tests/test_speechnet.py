import pytest
import torch
import torch.nn.functional as F

from speechnet import M5


@pytest.fixture
def waveforms():
    torch.manual_seed(0)
    return torch.randn(4, 1, 8000)


def test_log_probabilities(waveforms):
    model = M5(n_output=10)
    with torch.no_grad():
        out = model(waveforms)  # ok: a unit test may run the model in training mode
    assert out.shape == (4, 10)
    assert torch.allclose(out.exp().sum(-1), torch.ones(4), atol=1e-4)


def test_batchnorm_updates_running_stats_in_train_mode(waveforms):
    model = M5(n_output=10)
    before = model.bn1.running_mean.clone()
    with torch.no_grad():
        model(waveforms)  # ok
    assert not torch.equal(before, model.bn1.running_mean)


def test_overfits_a_single_batch(waveforms):
    model = M5(n_output=3)
    target = torch.tensor([0, 1, 2, 1])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(50):
        optimizer.zero_grad()
        loss = F.nll_loss(model(waveforms), target)
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1


def test_state_dict_round_trip(tmp_path, waveforms):
    model = M5(n_output=5).eval()
    path = tmp_path / "m5.pt"
    torch.save(model.state_dict(), path)
    restored = M5(n_output=5)
    restored.load_state_dict(torch.load(path, weights_only=True))
    restored.eval()
    with torch.no_grad():
        assert torch.allclose(model(waveforms), restored(waveforms))
