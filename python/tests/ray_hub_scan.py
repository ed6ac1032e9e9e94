"""Hub-scale checkpoint scanning with Ray Data, on a local Ray instance (the README recipe).

Run by python/tests/integration.sh in the wheel's environment after `pip install "ray[data]"`:

    python python/tests/ray_hub_scan.py

It builds a directory of checkpoint files from the repository's committed fixtures (each copied
several times under names that do not tell their format), scans them with
`ray.data.from_items(...).map_batches(torchvet.hub.scan_batch)` on a local two-CPU Ray
instance, writes JSON lines with `write_json`, reads them back and checks every row against a
direct `torchvet.ckpt.scan` of the original fixture. A path that does not exist must come back
as one `error` row without failing its batch. Nothing is unpickled.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import ray

from torchvet import ckpt
from torchvet.hub import COLUMNS, scan_batch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "resources" / "test" / "checkpoints"
COPIES = 4
BATCH = 32


def main() -> int:
    originals = sorted(
        p for p in FIXTURES.iterdir() if p.is_file() and p.suffix not in (".py", ".md")
    )
    # The verdict of each fixture, scanned directly (one process, no Ray).
    direct = {Path(r["path"]).name: r for r in ckpt.scan([str(p) for p in originals])}
    if len(direct) != len(originals):
        print(f"direct scan returned {len(direct)} reports for {len(originals)} files")
        return 1
    verdicts = {v["verdict"] for v in direct.values()}
    if not {"safe", "dangerous", "malformed"} <= verdicts:
        print(f"the fixtures should cover safe, dangerous and malformed files: {verdicts}")
        return 1

    work = Path(tempfile.mkdtemp(prefix="torchvet-ray-"))
    try:
        hub = work / "hub"
        hub.mkdir()
        expected = {}
        n = 0
        for copy in range(COPIES):
            for p in originals:
                # Names that do not tell the format: the scan decides by content.
                target = hub / f"org{copy}" / f"blob{n:05d}"
                target.parent.mkdir(exist_ok=True)
                shutil.copyfile(p, target)
                expected[str(target)] = direct[p.name]
                n += 1
        missing = str(hub / "gone" / "never-written.bin")
        paths = sorted(expected) + [missing]

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        start = time.time()
        ds = ray.data.from_items([{"path": p} for p in paths])
        out = work / "results"
        ds.map_batches(scan_batch, batch_size=BATCH).write_json(str(out))
        took = time.time() - start
        ray.shutdown()

        rows = []
        for f in sorted(glob.glob(str(out / "*.json"))):
            with open(f, encoding="utf-8") as fh:
                rows.extend(json.loads(line) for line in fh if line.strip())
        problems = []
        if len(rows) != len(paths):
            problems.append(f"{len(rows)} result rows for {len(paths)} paths")
        seen = set()
        for r in rows:
            if set(r) != set(COLUMNS):
                problems.append(f"columns {sorted(r)}")
                continue
            seen.add(r["path"])
            if r["path"] == missing:
                if r["verdict"] != "error" or not r["error"]:
                    problems.append(f"missing file: {r}")
                continue
            want = expected.get(r["path"])
            if want is None:
                problems.append(f"unexpected path {r['path']}")
                continue
            got = (r["verdict"], r["format"], json.loads(r["findings"]), json.loads(r["globals"]))
            exp = (want["verdict"], want.get("format") or "", want["findings"], want["globals"])
            if got != exp:
                problems.append(f"{r['path']}: {got[:2]} != {exp[:2]}")
        if seen != set(paths):
            problems.append(f"{len(set(paths) - seen)} paths without a row")
        for p in problems[:20]:
            print("FAIL:", p)
        if problems:
            return 1
        counts = {}
        for r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        print(
            f"ray data: {len(rows)} rows in {len(os.listdir(out))} JSON-lines files, "
            f"{took:.1f}s on a local 2-CPU instance; verdicts {dict(sorted(counts.items()))}; "
            "every row matches a direct scan"
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
