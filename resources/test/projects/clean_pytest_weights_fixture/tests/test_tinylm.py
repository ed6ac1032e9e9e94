import pytest
import torch

from tinylm import TinyLM, generate


@pytest.fixture(scope="session")
def weights_path(tmp_path_factory):
    """Creates and saves a deterministic model for testing."""
    path = tmp_path_factory.mktemp("models") / "tinylm_test_weights.pt"
    if not path.exists():
        torch.manual_seed(123)
        model = TinyLM()
        torch.save(model.state_dict(), path)
    return path


def test_generate_is_deterministic(weights_path):
    model = TinyLM()
    model.load_state_dict(torch.load(weights_path))  # ok: the fixture above wrote this file
    a = generate(model, torch.zeros(1, 1, dtype=torch.long), 5)
    b = generate(model, torch.zeros(1, 1, dtype=torch.long), 5)
    assert torch.equal(a, b)
