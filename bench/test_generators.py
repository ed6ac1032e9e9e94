"""Checks of the benchmark's input generators (no timing, no network, nothing unpickled).

Run: python3 -m unittest discover -s bench -p 'test_*.py'
"""

import json
import os
import pickletools
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def opcodes(data: bytes):
    return [(op.name, arg) for op, arg, _ in pickletools.genops(data)]


class CheckpointGeneratorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = cls.tmp.name
        subprocess.run(
            [sys.executable, os.path.join(HERE, "gen_checkpoints.py"), "--out", cls.out, "--small", "8", "--no-large"],
            check=True, capture_output=True,
        )
        with open(os.path.join(cls.out, "manifest.json")) as fh:
            cls.manifest = json.load(fh)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, rel):
        return os.path.join(self.out, rel)

    def test_manifest_lists_every_file_with_its_size(self):
        kinds = {f["kind"] for f in self.manifest["files"]}
        self.assertEqual(kinds, {"small", "medium", "unsafe"})
        for f in self.manifest["files"]:
            self.assertEqual(os.path.getsize(self.path(f["path"])), f["bytes"], f["path"])

    def test_zip_layout_matches_torch(self):
        with zipfile.ZipFile(self.path("small/ckpt-0000.pt")) as zf:
            names = zf.namelist()
            self.assertIsNone(zf.testzip())
            self.assertEqual(names[:4], ["ckpt-0000/data.pkl", "ckpt-0000/.format_version",
                                         "ckpt-0000/.storage_alignment", "ckpt-0000/byteorder"])
            self.assertEqual(names[-2:], ["ckpt-0000/version", "ckpt-0000/.data/serialization_id"])
            self.assertEqual(zf.read("ckpt-0000/version"), b"3\n")
            self.assertEqual(len(zf.read("ckpt-0000/.data/serialization_id")), 40)
            self.assertTrue(all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist()))

    def test_records_are_64_byte_aligned(self):
        path = self.path("medium/resnet50-like.pt")
        with zipfile.ZipFile(path) as zf, open(path, "rb") as fh:
            for info in zf.infolist():
                fh.seek(info.header_offset)
                header = fh.read(30)
                name_len, extra_len = struct.unpack("<HH", header[26:30])
                self.assertEqual((info.header_offset + 30 + name_len + extra_len) % 64, 0, info.filename)

    def test_storage_sizes_match_persistent_ids(self):
        itemsize = {"FloatStorage": 4, "LongStorage": 8, "HalfStorage": 2, "BFloat16Storage": 2}
        with zipfile.ZipFile(self.path("small/ckpt-0003.pt")) as zf:
            ops = opcodes(zf.read("ckpt-0003/data.pkl"))
            self.assertEqual(ops[0], ("PROTO", 2))
            # MARK 'storage' GLOBAL('torch <T>Storage') key 'cpu' numel TUPLE BINPERSID; strings and
            # globals repeat through the memo (BINPUT/BINGET), so follow the memo for literals
            memo, frames, found = {}, [[]], 0
            for name, arg in ops:
                if name in ("BINUNICODE", "GLOBAL", "BININT", "BININT1", "BININT2"):
                    frames[-1].append(arg)
                elif name == "BINPUT":
                    memo[arg] = frames[-1][-1] if frames[-1] else None
                elif name == "BINGET":
                    frames[-1].append(memo.get(arg))
                elif name == "MARK":
                    frames.append([])
                elif name == "TUPLE":
                    items = tuple(frames.pop())
                    frames[-1].append(items)
                elif name == "BINPERSID":
                    tag, stype, key, location, numel = frames[-1].pop()
                    self.assertEqual((tag, location), ("storage", "cpu"))
                    module, stype = stype.split(" ")
                    self.assertEqual(module, "torch")
                    data = zf.read(f"ckpt-0003/data/{key}")
                    self.assertEqual(len(data), numel * itemsize[stype])
                    found += 1
            self.assertGreater(found, 0)

    def test_only_expected_globals_in_benign_files(self):
        allowed = {"collections OrderedDict", "torch._utils _rebuild_tensor_v2", "torch FloatStorage",
                   "torch LongStorage", "torch HalfStorage", "torch BFloat16Storage"}
        for f in self.manifest["files"]:
            if f["kind"] == "unsafe" or not zipfile.is_zipfile(self.path(f["path"])):
                continue
            with zipfile.ZipFile(self.path(f["path"])) as zf:
                data = zf.read(zf.namelist()[0])
            globals_ = {arg for name, arg in opcodes(data) if name == "GLOBAL"}
            self.assertLessEqual(globals_, allowed, f["path"])

    def test_unsafe_files_carry_the_eval_payload(self):
        for name in ("eval-payload-0.pt", "eval-payload-1.pt", "eval-payload-2.pt"):
            with zipfile.ZipFile(self.path(f"unsafe/{name}")) as zf:
                data = zf.read(zf.namelist()[0])
            self.assertIn(("GLOBAL", "__builtin__ eval"), opcodes(data))

    def test_legacy_file_has_five_pickles_then_storages(self):
        with open(self.path("medium/legacy-format-benign.pt"), "rb") as fh:
            data = fh.read()
        pos, heads = 0, []
        for _ in range(5):
            ops = list(pickletools.genops(data[pos:]))
            heads.append(ops)
            pos += ops[-1][2] + 1  # STOP offset + 1
        self.assertEqual(heads[0][1][1], 0x1950A86A20F9469CFC6C)
        self.assertEqual(heads[1][1][1], 1001)
        keys = [arg for op, arg, _ in heads[4] if op.name == "BINUNICODE"]
        self.assertEqual(keys, sorted(keys))
        (numel,) = struct.unpack("<q", data[pos:pos + 8])
        self.assertGreater(numel, 0)

    def test_output_is_deterministic(self):
        with tempfile.TemporaryDirectory() as other:
            subprocess.run(
                [sys.executable, os.path.join(HERE, "gen_checkpoints.py"), "--out", other, "--small", "8",
                 "--no-large"],
                check=True, capture_output=True,
            )
            for f in self.manifest["files"]:
                with open(self.path(f["path"]), "rb") as a, open(os.path.join(other, f["path"]), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f["path"])


class NotebookGeneratorTest(unittest.TestCase):
    def test_cells_reassemble_the_source(self):
        sys.path.insert(0, HERE)
        try:
            import gen_notebooks
        finally:
            sys.path.pop(0)
        source = "import torch\n\nX = 1\n\n\n@dec\ndef f():\n    return torch.ones(1)\n\n\nclass M:\n    pass\n"
        cells = gen_notebooks.cells_for(source, "t")
        self.assertEqual(cells[0]["cell_type"], "markdown")
        code = ["".join(c["source"]) for c in cells[1:]]
        self.assertEqual(len(code), 3)
        self.assertTrue(code[1].startswith("@dec"))
        self.assertEqual("\n".join(code).split(), source.split())
        self.assertIsNone(gen_notebooks.cells_for("x = (", "bad"))


if __name__ == "__main__":
    unittest.main()
