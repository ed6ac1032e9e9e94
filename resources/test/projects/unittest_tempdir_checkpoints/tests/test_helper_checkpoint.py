"""Tests that write a checkpoint through a helper and read it back."""

import os
import tempfile

import torch

from ringbuf.store import SnapshotStore


def _write_checkpoint(model, folder, step=0):
    """Save a checkpoint holding the optimizer hyper-parameters too."""
    ckpt_path = os.path.join(folder, "ckpt.pt")
    torch.save(
        {"model": model.state_dict(), "step": step, "hparams": {"lr": 0.1}},
        ckpt_path,
    )
    return ckpt_path


class TestHelperCheckpoint:
    def test_roundtrip_in_tempdir(self):
        model = torch.nn.Linear(3, 1)
        with tempfile.TemporaryDirectory() as tmpdir:
            ckpt_path = _write_checkpoint(model, tmpdir, step=7)
            state = torch.load(ckpt_path, map_location="cpu", weights_only=False)  # ok
            assert state["step"] == 7

    def test_roundtrip_in_tmp_path(self, tmp_path):
        model = torch.nn.Linear(3, 1)
        state = torch.load(_write_checkpoint(model, folder=tmp_path), weights_only=False)  # ok
        assert "model" in state

    def test_roundtrip_in_checkout(self):
        # The helper writes below the working directory, not into a private folder.
        model = torch.nn.Linear(3, 1)
        ckpt_path = _write_checkpoint(model, "checkpoints")
        state = torch.load(ckpt_path, weights_only=False)  # expect: torch-load-without-weights-only
        assert "model" in state


class RunConfig:
    def __init__(self):
        self.out_dir = "runs"


def test_store_root_from_config(tmp_path):
    config = RunConfig()
    config.out_dir = tmp_path
    model = torch.nn.Linear(3, 1)
    SnapshotStore(str(config.out_dir)).save(2, model, {"lr": 0.1})
    snap = torch.load(config.out_dir / "step-2" / "snapshot.pt", weights_only=False)  # ok
    assert snap["extra"]["lr"] == 0.1


def test_store_root_from_default_config():
    config = RunConfig()
    model = torch.nn.Linear(3, 1)
    SnapshotStore(config.out_dir).save(4, model, {})
    snap = torch.load(os.path.join(config.out_dir, "step-4", "snapshot.pt"), weights_only=False)  # expect: torch-load-without-weights-only
    assert "model" in snap
