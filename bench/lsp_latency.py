#!/usr/bin/env python3
"""Re-check latency of `torchvet server` for an edited file, as an editor sees it.

Builds a workspace of N real files from the bench corpus (default 1000, in a temporary
directory), opens a ~1000-line file of it (plus a few others) over LSP, then makes E
single-character edits at random lines, each a `didChange` with a new version, and times
the moment the edit is written until the `publishDiagnostics` for that version arrives.
The server runs with `debounceMs: 0`, so the numbers are the re-check itself plus the
round trip (an editor adds the debounce, 100 ms by default).

Usage: bench/lsp_latency.py [--binary target/release/torchvet] [--files 1000] [--edits 300]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CORPUS = Path.home() / ".cache" / "torchvet-bench" / "corpus"


class Server:
    def __init__(self, binary: str):
        self.proc = subprocess.Popen(
            [binary, "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.messages = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self):
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.startswith(b"Content-Length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            msg = json.loads(body)
            with self.cond:
                self.messages.append((time.perf_counter(), msg))
                self.cond.notify_all()

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def wait(self, pred, timeout=30):
        deadline = time.perf_counter() + timeout
        with self.cond:
            while True:
                for i, (t, m) in enumerate(self.messages):
                    if pred(m):
                        del self.messages[: i + 1]
                        return t, m
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError("no answer")
                self.cond.wait(left)

    def request(self, method, params):
        self.next_id += 1
        i = self.next_id
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == i and "method" not in m)[1]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="target/release/torchvet")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    files = sorted(p for p in CORPUS.rglob("*.py") if p.is_file())
    if len(files) < args.files:
        sys.exit(f"need {args.files} corpus files in {CORPUS} (bench/run --prepare-only)")
    # The edited file: the corpus file closest to 1000 lines that mentions torch.
    sized = []
    for p in files:
        text = p.read_text(errors="replace")
        n = text.count("\n")
        if 900 <= n <= 1100 and "torch" in text:
            sized.append((abs(n - 1000), p))
    # Prefer the one with the most findings (so every re-check has work to report).
    candidates = [p for _, p in sorted(sized)[:40]]
    out = subprocess.run(
        [args.binary, "check", "--isolated", "--select", "ALL", "--no-cache",
         "--output-format", "json", *map(str, candidates)],
        capture_output=True, text=True,
    ).stdout
    counts = {}
    for f in json.loads(out or "[]"):
        counts[f["filename"]] = counts.get(f["filename"], 0) + 1
    target = max(candidates, key=lambda p: (counts.get(str(p), 0), -abs(
        p.read_text(errors="replace").count("\n") - 1000)))
    chosen = [target] + rng.sample([p for p in files if p != target], args.files - 1)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        for i, p in enumerate(chosen):
            dst = ws / f"pkg{i // 100}" / f"m{i}_{p.name}"
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dst)
        (ws / "pyproject.toml").write_text("[tool.torchvet]\nselect = [\"ALL\"]\n")
        edited = sorted(ws.glob("pkg0/m0_*"))[0]
        text = edited.read_text()
        lines = text.count("\n")
        # Lines that can take a trailing comment (not continued with a backslash, ASCII so
        # UTF-16 columns are byte columns).
        text_lines = text.split("\n")
        editable = [i for i, l in enumerate(text_lines[:lines])
                    if l.strip() and not l.rstrip().endswith("\\") and l.isascii()]
        s = Server(args.binary)
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
        # A few other open documents, as in a real session.
        for p in sorted(ws.rglob("*.py"))[1:11]:
            s.notify(
                "textDocument/didOpen",
                {"textDocument": {"uri": p.as_uri(), "languageId": "python", "version": 1,
                                  "text": p.read_text(errors="replace")}},
            )
        uri = edited.as_uri()
        t0 = time.perf_counter()
        s.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        t1, m = s.wait(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
        )
        first = len(m["params"]["diagnostics"])
        open_ms = (t1 - t0) * 1000
        times = []
        for version in range(2, args.edits + 2):
            line = rng.choice(editable)
            # Append a comment to a line, and remove it on the next edit: the file stays valid
            # Python, so every re-check parses and runs every rule.
            if version % 2 == 0:
                width = len(text_lines[line])
                change = {"range": {"start": {"line": line, "character": width},
                                    "end": {"line": line, "character": width}}, "text": "  # edited"}
                last = (line, width)
            else:
                line, width = last
                change = {"range": {"start": {"line": line, "character": width},
                                    "end": {"line": line, "character": width + 10}}, "text": ""}
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
            times.append((t - start) * 1000)
        s.request("shutdown", None)
        s.notify("exit", None)
        s.proc.wait(timeout=10)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"workspace: {args.files} files; edited: {target.relative_to(CORPUS)} ({lines} lines), "
          f"{first} findings with select=ALL; first check on open {open_ms:.1f} ms")
    print(f"re-check latency over {len(times)} edits (didChange -> publishDiagnostics, debounce 0): "
          f"p50 {p(0.50):.2f} ms, p95 {p(0.95):.2f} ms, max {times[-1]:.2f} ms, "
          f"mean {statistics.mean(times):.2f} ms")


if __name__ == "__main__":
    main()
