#!/usr/bin/env python3
"""Compare torchvet's fixes with TorchFix's published codemod cases.

TorchFix ships each codemod case as a pair `tests/fixtures/**/codemod/<case>.in.py` (input)
and `<case>.out.py` (what TorchFix writes). This script runs `torchvet check --fix
--unsafe-fixes` on every input (only the rules TorchFix's codes map to, via their TOR aliases)
and compares the result with TorchFix's expected output. It prints a Markdown table (one row
per case: match, or the differing lines) and exits 0; `--strict` exits 1 on any difference
not listed in KNOWN_DIFFERENCES (each with the reason torchvet differs on purpose; see
bench/TORCHFIX-CODEMODS.md).

Nothing of TorchFix is stored in this repository: the cases are read at run time from
  --fixtures DIR   a TorchFix checkout (its `tests/fixtures` is searched), or
  --git-dir DIR    a bare TorchFix repository (read with `git show HEAD:<path>`), or
  the cache dir ~/.cache/torchvet-bench/torchfix (a checkout placed there),
and optionally `--torchfix BIN` also runs TorchFix itself on each input, to check that the
expected outputs are what the installed TorchFix writes.

Usage:
  bench/torchfix_codemods.py --git-dir /path/to/torchfix.git [--torchvet target/release/torchvet]
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

# The TorchFix codes torchvet accepts as aliases of its rules (crates/torchvet_linter rules'
# `torchfix:` lists).
TOR_CODES = [
    "TOR001", "TOR002", "TOR003", "TOR004", "TOR101", "TOR102", "TOR103", "TOR104",
    "TOR105", "TOR106", "TOR107", "TOR108", "TOR109", "TOR201", "TOR202", "TOR203",
    "TOR401", "TOR402", "TOR901",
]

# Cases where torchvet writes something else on purpose, with the reason (also in
# bench/TORCHFIX-CODEMODS.md). A listed case that starts matching is reported too.
KNOWN_DIFFERENCES = {
    "vision/codemod/pretrained": "layout only: torchvet replaces the two keyword arguments in "
    "place and keeps the call's line break; TorchFix re-renders the call on one line",
}


def read_cases_from_dir(root):
    base = os.path.join(root, "tests", "fixtures") if os.path.isdir(os.path.join(root, "tests")) else root
    cases = {}
    for dirpath, _, names in os.walk(base):
        if os.path.basename(dirpath) != "codemod":
            continue
        for n in names:
            if n.endswith(".in.py"):
                stem = n[: -len(".in.py")]
                out = os.path.join(dirpath, stem + ".out.py")
                if os.path.exists(out):
                    rel = os.path.relpath(os.path.join(dirpath, stem), base).replace(os.sep, "/")
                    with open(os.path.join(dirpath, n), encoding="utf-8") as f_in, open(out, encoding="utf-8") as f_out:
                        cases[rel] = (f_in.read(), f_out.read())
    return cases


def read_cases_from_git(git_dir):
    names = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    show = lambda p: subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{p}"], check=True, capture_output=True, text=True
    ).stdout
    cases = {}
    for p in names:
        if "/codemod/" in p and p.endswith(".in.py") and p.startswith("tests/fixtures/"):
            out = p[: -len(".in.py")] + ".out.py"
            if out in names:
                rel = p[len("tests/fixtures/"): -len(".in.py")]
                cases[rel] = (show(p), show(out))
    return cases


def run_torchvet(torchvet, source):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "case.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        subprocess.run(
            [torchvet, "check", "case.py", "--isolated", "--fix", "--unsafe-fixes", "--quiet",
             "--select", ",".join(TOR_CODES)],
            cwd=d, capture_output=True, text=True,
        )
        with open(path, encoding="utf-8") as f:
            return f.read()


def run_torchfix(torchfix, source):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "case.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        subprocess.run([torchfix, "--fix", "case.py"], cwd=d, capture_output=True, text=True)
        with open(path, encoding="utf-8") as f:
            return f.read()


def short_diff(expected, got):
    lines = difflib.unified_diff(expected.splitlines(), got.splitlines(), "torchfix", "torchvet", n=0, lineterm="")
    return [l for l in lines if not l.startswith(("---", "+++", "@@"))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", help="a TorchFix checkout (or its tests/fixtures directory)")
    ap.add_argument("--git-dir", help="a bare TorchFix git repository")
    ap.add_argument("--torchvet", default=os.environ.get("TORCHVET_BIN") or shutil.which("torchvet")
                    or os.path.join(os.path.dirname(__file__), "..", "target", "release", "torchvet"))
    ap.add_argument("--torchfix", help="also run this TorchFix binary and compare with its expected outputs")
    ap.add_argument("--strict", action="store_true", help="exit 1 on a difference not listed as deliberate")
    args = ap.parse_args()
    if args.git_dir:
        cases = read_cases_from_git(args.git_dir)
    else:
        root = args.fixtures or os.path.expanduser("~/.cache/torchvet-bench/torchfix")
        if not os.path.isdir(root):
            sys.exit(f"no TorchFix fixtures at {root}: pass --fixtures or --git-dir")
        cases = read_cases_from_dir(root)
    if not cases:
        sys.exit("no codemod cases found")
    rows = []
    unexpected = []
    for name in sorted(cases):
        src, expected = cases[name]
        got = run_torchvet(args.torchvet, src)
        same = got.strip() == expected.strip()
        # The same code, up to whitespace and line breaks inside brackets.
        squash = lambda t: "".join(t.split())
        same_code = squash(got) == squash(expected)
        tf = ""
        if args.torchfix:
            tf = "yes" if run_torchfix(args.torchfix, src).strip() == expected.strip() else "no"
        diff = [] if same else short_diff(expected, got)
        known = KNOWN_DIFFERENCES.get(name)
        if not same and not known:
            unexpected.append(name)
        rows.append((name, same, diff, known, tf, same_code))
    matched = sum(1 for r in rows if r[1])
    same_code = sum(1 for r in rows if r[5])
    print(f"# torchvet vs TorchFix codemod cases: {matched} of {len(rows)} match exactly, "
          f"{same_code} of {len(rows)} up to whitespace\n")
    if args.torchfix:
        print("'TorchFix itself': whether the installed TorchFix writes its own expected output.\n")
    head = "| case | torchvet output = TorchFix's expected | same up to whitespace | " + ("TorchFix itself | " if args.torchfix else "") + "differing lines (- TorchFix, + torchvet) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, same, diff, known, tf, same_code in rows:
        d = "<br>".join(f"`{l.strip()}`" for l in diff[:12]).replace("|", "\\|")
        if len(diff) > 12:
            d += f"<br>... {len(diff) - 12} more"
        print(f"| {name} | {'yes' if same else 'no'} | {'yes' if same_code else 'no'} | "
              + (f"{tf} | " if args.torchfix else "") + f"{d} |")
    if unexpected:
        print(f"\nDifferences not listed as deliberate: {', '.join(unexpected)}")
    return 1 if (args.strict and unexpected) else 0


if __name__ == "__main__":
    sys.exit(main())
