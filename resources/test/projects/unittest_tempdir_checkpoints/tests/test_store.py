import os
import shutil
import tempfile
import unittest

import torch
from huggingface_hub import hf_hub_download

from ringbuf.store import SnapshotStore


class FakeExtra:
    def __init__(self, tag):
        self.tag = tag


class TestSnapshotStore(unittest.TestCase):
    def setUp(self):
        self.base_dir = tempfile.mkdtemp()
        self.case_dir = os.path.join(self.base_dir, self._testMethodName)

    def tearDown(self):
        shutil.rmtree(self.base_dir)

    def fake_write(self, state, folder):
        os.makedirs(folder, exist_ok=True)
        state = dict(state, extra=FakeExtra("t"))
        torch.save(state, os.path.join(folder, "snapshot.pt"))

    def test_extra_is_kept(self):
        model = torch.nn.Linear(2, 2)
        store = SnapshotStore(self.case_dir, writer=self.fake_write)
        store.save(3, model, {"lr": 0.1})
        # The whole object comes back: the test wrote it into its own temporary folder.
        sd = torch.load(
            os.path.join(self.case_dir, "step-3", "snapshot.pt"),
            weights_only=False,  # ok
        )
        self.assertEqual(sd["extra"].tag, "t")

    def test_path_in_a_variable(self):
        model = torch.nn.Linear(2, 2)
        SnapshotStore(self.case_dir, writer=self.fake_write).save(1, model, {})
        path = os.path.join(self.case_dir, "step-1", "snapshot.pt")
        data = torch.load(path, weights_only=False)  # ok
        self.assertIn("model", data)

    def test_with_temporary_directory(self):
        model = torch.nn.Linear(2, 2)
        with tempfile.TemporaryDirectory() as tmp:
            SnapshotStore(tmp, writer=self.fake_write).save(2, model, {})
            data = torch.load(f"{tmp}/step-2/snapshot.pt", weights_only=False)  # ok
        self.assertIn("extra", data)

    def test_published_snapshot_still_loads(self):
        # A file from the hub is not the test's own, temporary folder or not.
        path = hf_hub_download("org/ringbuf-snapshots", "snapshot.pt")
        data = torch.load(path, weights_only=False)  # expect: torch-load-without-weights-only
        self.assertIn("model", data)
