import torch

from ringbuf.store import SnapshotStore


def test_roundtrip(tmp_path):
    model = torch.nn.Linear(2, 2)
    SnapshotStore(str(tmp_path)).save(5, model, {"lr": 0.5})
    state = torch.load(tmp_path / "step-5" / "snapshot.pt", weights_only=False)  # ok
    assert state["extra"]["lr"] == 0.5
