#!/usr/bin/env python3
"""Re-check latency of `torchvet server` with the whole-project model, on a real package.

Copies one package of the bench corpus (default diffusers, ~1,100 files) as it is into a
temporary workspace, starts `torchvet server` on it over stdio (debounce 0), waits until the
server reports its project model built, and opens a file of about 1,000 lines together with
up to ten files of the package that import it. Then it makes E edits to that file: a comment
appended to a random line, then removed again (each edit moves the code after it, so the
file's summary changes and the model is relinked every time). For each edit it times:

- `edited`: didChange until the publishDiagnostics of the edited file at that version;
- `all`: didChange until the last publishDiagnostics of any open document that the edit
  re-checked (its dependents whose view of the project changed), taken after a quiet period
  of 300 ms with no further publication (the quiet period itself is not counted).

With --cross-file it measures the other direction too: two small files are added at the
workspace root, `tv_bench_models.py` (a module whose forward ends in softmax) and
`tv_bench_train.py` (which feeds it to CrossEntropyLoss: `cross-entropy-after-softmax`). Both
are opened; each edit removes or restores the softmax in the models file, and the time is
taken from that didChange until train's publishDiagnostics shows the finding gone or back.
That path includes the relink of the whole model (the edited file alone does not).

Usage: bench/lsp_project_latency.py [--binary target/release/torchvet]
       [--package diffusers-0.42.1] [--edited path/in/package.py] [--edits 200] [--cross-file]
"""

import argparse
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import CORPUS, Server  # noqa: E402


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def importers(root: Path, edited: Path, files):
    """Files whose imports name the edited module (absolute or relative, by its last name)."""
    stem = edited.stem
    mod = module_name(edited.relative_to(root))
    pat = re.compile(
        rf"^\s*(from\s+[\w.]*\b{re.escape(stem)}\s+import|import\s+{re.escape(mod)}\b)", re.M
    )
    out = []
    for p in files:
        if p == edited:
            continue
        try:
            if pat.search(p.read_text(errors="replace")):
                out.append(p)
        except OSError:
            pass
    return out


MODELS = """import torch
from torch import nn


class BenchNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)
"""

TRAIN = """import torch
from torch import nn

from tv_bench_models import BenchNet

model = BenchNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
"""


def has_finding(m, name):
    return any(d.get("data", {}).get("name") == name for d in m["params"]["diagnostics"])


def cross_file(s, ws, edits):
    """didChange of the models file until the open train file's finding flips."""
    models, train = ws / "tv_bench_models.py", ws / "tv_bench_train.py"
    for p, text in ((models, MODELS), (train, TRAIN)):
        s.notify("textDocument/didOpen",
                 {"textDocument": {"uri": p.as_uri(), "languageId": "python", "version": 1,
                                   "text": text}})
    name = "cross-entropy-after-softmax"
    s.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
           and m["params"]["uri"] == train.as_uri() and has_finding(m, name), timeout=60)
    plain = MODELS.replace("torch.softmax(self.fc(x), dim=-1)", "self.fc(x)")
    times = []
    for version in range(2, edits + 2):
        text, want = (plain, False) if version % 2 == 0 else (MODELS, True)
        start = time.perf_counter()
        s.notify("textDocument/didChange",
                 {"textDocument": {"uri": models.as_uri(), "version": version},
                  "contentChanges": [{"text": text}]})
        t, _ = s.wait(lambda m, w=want: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == train.as_uri() and has_finding(m, name) == w,
                      timeout=60)
        times.append((t - start) * 1000)
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/torchvet")
    ap.add_argument("--package", default="diffusers-0.42.1")
    ap.add_argument("--edited", help="file to edit, relative to the package (default: chosen)")
    ap.add_argument("--edits", type=int, default=200)
    ap.add_argument("--open-dependents", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cross-file", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    src = CORPUS / args.package
    if not src.is_dir():
        sys.exit(f"no {src} (bench/run --prepare-only)")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / args.package
        shutil.copytree(src, ws)
        if args.cross_file:
            (ws / "tv_bench_models.py").write_text(MODELS)
            (ws / "tv_bench_train.py").write_text(TRAIN)
        files = sorted(p for p in ws.rglob("*.py") if p.is_file())
        if args.edited:
            edited = ws / args.edited
        else:
            # The file of 900-1,100 lines with the most importers in the package.
            sized = [p for p in files if 900 <= p.read_text(errors="replace").count("\n") <= 1100]
            if not sized:
                sys.exit("no file of about 1,000 lines in the package")
            edited = max(sized, key=lambda p: (len(importers(ws, p, files)), str(p)))
        deps = importers(ws, edited, files)[: args.open_dependents]
        text = edited.read_text()
        text_lines = text.split("\n")
        editable = [
            i
            for i, line in enumerate(text_lines[:-1])
            if line.strip() and not line.rstrip().endswith("\\") and line.isascii()
            and '"""' not in line and "'''" not in line
        ]
        s = Server(args.binary)
        t0 = time.perf_counter()
        s.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": ws.as_uri(),
                "capabilities": {},
                "initializationOptions": {"debounceMs": 0},
            },
        )
        s.notify("initialized", {})
        _, m = s.wait(
            lambda m: m.get("method") in ("window/logMessage", "window/showMessage")
            and "project model" in m["params"]["message"],
            timeout=600,
        )
        build_s = time.perf_counter() - t0
        print(m["params"]["message"], f"(client: {build_s:.2f}s)")
        opened = [edited] + deps
        for p in opened:
            s.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": p.as_uri(), "languageId": "python", "version": 1,
                                  "text": p.read_text(errors="replace")}},
            )
        for p in opened:
            s.wait(lambda m, u=p.as_uri(): m.get("method") == "textDocument/publishDiagnostics"
                   and m["params"]["uri"] == u)
        # Let re-checks caused by the opening settle.
        while True:
            try:
                s.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", timeout=1)
            except TimeoutError:
                break
        uri = edited.as_uri()
        edited_ms, all_ms, rechecked = [], [], []
        last = None
        for version in range(2, args.edits + 2):
            if version % 2 == 0:
                line = rng.choice(editable)
                width = len(text_lines[line])
                change = {"range": {"start": {"line": line, "character": width},
                                    "end": {"line": line, "character": width}},
                          "text": "  # edited"}
                last = (line, width)
            else:
                line, width = last
                change = {"range": {"start": {"line": line, "character": width},
                                    "end": {"line": line, "character": width + 10}},
                          "text": ""}
            start = time.perf_counter()
            s.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
            )
            t, _ = s.wait(
                lambda m, v=version: m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == v
            )
            edited_ms.append((t - start) * 1000)
            end, others = t, set()
            while True:
                try:
                    t2, m2 = s.wait(
                        lambda m: m.get("method") == "textDocument/publishDiagnostics",
                        timeout=0.3,
                    )
                except TimeoutError:
                    break
                end = max(end, t2)
                others.add(m2["params"]["uri"])
            all_ms.append((end - start) * 1000)
            rechecked.append(len(others))
        cross = cross_file(s, ws, max(20, args.edits // 5)) if args.cross_file else None
        s.request("shutdown", None)
        s.notify("exit", None)
        s.proc.wait(timeout=10)
        lines = text.count("\n")
        rel = edited.relative_to(ws)

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))]

    print(f"workspace: {args.package} ({len(files)} .py files); edited: {rel} ({lines} lines); "
          f"open: it and {len(deps)} files that import it")
    for name, xs in (("edited file", edited_ms), ("edited + dependents", all_ms)):
        print(f"{name:>20}: p50 {pct(xs, 0.5):.1f} ms, p95 {pct(xs, 0.95):.1f} ms, "
              f"max {max(xs):.1f} ms, mean {statistics.mean(xs):.1f} ms over {len(xs)} edits")
    print(f"open dependents re-checked per edit: mean {statistics.mean(rechecked):.1f}, "
          f"max {max(rechecked)}")
    if cross:
        print(f"{'cross-file':>20}: p50 {pct(cross, 0.5):.1f} ms, p95 {pct(cross, 0.95):.1f} ms, "
              f"max {max(cross):.1f} ms, mean {statistics.mean(cross):.1f} ms over {len(cross)} "
              f"edits of tv_bench_models.py until tv_bench_train.py's finding flips")


if __name__ == "__main__":
    main()
