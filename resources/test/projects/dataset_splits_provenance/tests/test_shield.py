import tempfile
import unittest
from pathlib import Path

import numpy as np
import torch

from graphkit.shield import load_mask


class ShieldTest(unittest.TestCase):
    def test_load_mask(self):
        with tempfile.TemporaryDirectory() as tmpdir:
            path = Path(tmpdir) / "shield_q.pt"
            torch.save({"shield": torch.tensor([[1, 0], [0, 1]])}, path)
            mask = load_mask(path)
            self.assertTrue(np.array_equal(mask, np.eye(2, dtype=np.int64)))


if __name__ == "__main__":
    unittest.main()
