"""Tests of the installed wheel: the executable on PATH, ``python -m torchvet`` and the Python
API. Run inside the virtual environment the wheel was installed into:

    python -m unittest discover -s python/tests -p "test_*.py" -v
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torchvet
from torchvet import ckpt

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo_project"
CKPTS = REPO / "resources" / "test" / "checkpoints"

# A bare torch.load is a finding before torch 2.6 (the tests target 2.4); the fix is safe
# because the file's own save writes a state_dict.
BUGGY = (
    'import torch\n\n\ndef save(model):\n    torch.save(model.state_dict(), "ckpt.pt")\n\n\n'
    'state = torch.load("ckpt.pt")\n'
)


class Installed(unittest.TestCase):
    def test_binary_is_installed_in_the_environment(self):
        exe = torchvet.find_torchvet_bin()
        # The one from the wheel, in this environment's scripts directory.
        self.assertTrue(Path(exe).resolve().is_relative_to(Path(sys.prefix).resolve()), exe)
        self.assertEqual(shutil.which("torchvet"), exe)
        out = subprocess.run(["torchvet", "--version"], capture_output=True, text=True, check=True)
        self.assertRegex(out.stdout, r"^torchvet \d+\.\d+\.\d+")
        self.assertEqual(torchvet.version(), out.stdout.split()[-1])

    def test_python_dash_m(self):
        out = subprocess.run(
            [sys.executable, "-m", "torchvet", "check", str(DEMO), "--output-format", "concise"],
            capture_output=True,
            text=True,
        )
        self.assertEqual(out.returncode, 1, out.stderr)  # the demo has findings on purpose
        self.assertIn("TV007", out.stdout)  # torch-load-without-weights-only


class Check(unittest.TestCase):
    def test_check_returns_findings(self):
        findings = torchvet.check(DEMO)
        self.assertTrue(findings)
        names = {f["name"] for f in findings}
        self.assertIn("torch-load-without-weights-only", names)
        f = findings[0]
        for key in ("code", "name", "severity", "message", "filename", "location", "url"):
            self.assertIn(key, f)
        self.assertEqual(len(list(torchvet.iter_check(DEMO))), len(findings))

    def test_selection(self):
        findings = torchvet.check([DEMO], select=["security"])
        self.assertTrue(findings)
        self.assertEqual({f["name"] for f in findings}, {"torch-load-without-weights-only"})
        ignored = torchvet.check(DEMO, ignore=["torch-load-without-weights-only"])
        self.assertNotIn("torch-load-without-weights-only", {f["name"] for f in ignored})

    def test_clean_code_and_fix(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "load.py"
            p.write_text(BUGGY)
            old = {"isolated": True, "target_torch": "2.4"}
            self.assertEqual(len(torchvet.check(p, **old)), 1)
            self.assertEqual(p.read_text(), BUGGY, "check never writes without fix=True")
            self.assertEqual(torchvet.check(p, fix=True, **old), [])
            self.assertIn("weights_only=True", p.read_text())
            self.assertEqual(torchvet.check(p, **old), [])
            # At torch 2.6 a bare torch.load is already weights-only: nothing to report.
            p.write_text(BUGGY)
            self.assertEqual(torchvet.check(p, isolated=True, target_torch="2.6"), [])
            # With no torch version declared anywhere, an older torch is not ruled out: a
            # "may", one severity lower (info, since the file writes the checkpoint itself).
            (may,) = torchvet.check(p, isolated=True)
            self.assertEqual(may["severity"], "info")
            self.assertIn("may unpickle", may["message"])

    def test_errors_raise(self):
        with self.assertRaises(torchvet.TorchvetError) as e:
            torchvet.check(DEMO, select=["no-such-rule"])
        self.assertEqual(e.exception.returncode, 2)
        self.assertIn("no-such-rule", str(e.exception))


class Others(unittest.TestCase):
    def test_review_project_summary(self):
        r = torchvet.review(DEMO)
        self.assertIn("critical", r)
        self.assertTrue(r["critical"])
        self.assertIn("# ", torchvet.review(DEMO, format="markdown"))
        p = torchvet.project(DEMO)
        self.assertTrue(p["is_pytorch_project"])
        cards = torchvet.summary(str(DEMO / "model.py"))
        self.assertIn("Classifier", {c["name"] for c in cards})

    def test_rules(self):
        rules = torchvet.rules()
        self.assertGreater(len(rules), 100)
        self.assertEqual(torchvet.rule("TV007")["name"], "torch-load-without-weights-only")

    def test_ckpt(self):
        verdicts = {
            os.path.basename(f["path"]): f["verdict"]
            for f in ckpt.scan([CKPTS / "benign_linear.pt", CKPTS / "mal_reduce_print.pt"])
        }
        self.assertEqual(verdicts["benign_linear.pt"], "safe")
        self.assertEqual(verdicts["mal_reduce_print.pt"], "dangerous")
        info = ckpt.inspect(CKPTS / "benign_linear.pt")
        self.assertEqual(info["format"], "torch-zip")
        d = ckpt.diff(CKPTS / "benign_linear.pt", CKPTS / "benign_tied.pt")
        self.assertIn("weight", d["missing_keys"])
        with self.assertRaises(ValueError):
            ckpt.diff(CKPTS / "benign_linear.pt")

    def test_hub_scan_batch(self):
        from torchvet.hub import COLUMNS, scan_batch

        safe = str(CKPTS / "benign_linear.pt")
        bad = str(CKPTS / "mal_reduce_print.pt")
        gone = str(CKPTS / "no-such-checkpoint.pt")
        rows = scan_batch({"path": [bad, gone, safe, bad]})
        self.assertEqual(list(rows), list(COLUMNS))
        # One row per input path, in order, duplicates and missing files included.
        self.assertEqual(rows["path"], [bad, gone, safe, bad])
        self.assertEqual(rows["verdict"], ["dangerous", "error", "safe", "dangerous"])
        self.assertEqual(rows["format"][2], "torch-zip")
        self.assertIn("no such file", rows["error"][1])
        self.assertEqual(rows["error"][0], "")
        self.assertIn("builtins.print", rows["globals"][0])
        self.assertEqual(rows["findings"][2], "[]")
        self.assertEqual(scan_batch({"file": [safe]}, column="file")["verdict"], ["safe"])


if __name__ == "__main__":
    unittest.main()
