#!/usr/bin/env python3
"""Draw a stratified sample of default-rule findings for a precision audit, with context.

Runs `torchvet check --output-format json` (default rules) on every directory under ROOT (one
checked-out repository each), pools the findings, and samples up to --per-rule findings of
each rule (all of them for rarer rules), spread over repositories, with a fixed seed. For each
sampled finding it prints the repository, file, line, rule, message and a window of source
lines around it, for a reviewer to judge right / wrong / debatable in context. `--tsv` writes
the sample as a table with an empty verdict column to fill in.

Usage:
  bench/audit_sample.py ROOT [--per-rule 8] [--seed 1] [--context 12] [--tsv audit.tsv]
"""
import argparse
import collections
import json
import os
import random
import subprocess
import sys


def findings(torchvet, repo):
    out = subprocess.run(
        [torchvet, "check", ".", "--output-format", "json", "--exit-zero"],
        cwd=repo, capture_output=True, text=True,
    ).stdout
    try:
        return json.loads(out or "[]")
    except json.JSONDecodeError:
        return []


def context(repo, d, width):
    path = os.path.join(repo, d["filename"])
    try:
        if path.endswith(".ipynb"):
            nb = json.load(open(path, encoding="utf-8"))
            code = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
            cell_no = d.get("cell") or 1
            cell = nb["cells"][cell_no - 1]
            src = cell.get("source", "")
            lines = ("".join(src) if isinstance(src, list) else src).splitlines()
            del code
        else:
            lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except (OSError, ValueError, IndexError, KeyError):
        return "(source not readable)"
    row = d["location"]["row"]
    lo, hi = max(1, row - width), min(len(lines), row + width // 2)
    return "\n".join(f"{'>' if i == row else ' '}{i:5} {lines[i - 1]}" for i in range(lo, hi + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--torchvet", default=os.environ.get("TORCHVET_BIN", "torchvet"))
    ap.add_argument("--per-rule", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--context", type=int, default=12)
    ap.add_argument("--tsv")
    args = ap.parse_args()
    pool = collections.defaultdict(list)
    counts = collections.Counter()
    for repo in sorted(os.listdir(args.root)):
        path = os.path.join(args.root, repo)
        if not os.path.isdir(path):
            continue
        for d in findings(args.torchvet, path):
            if d.get("name") == "syntax-error":
                pool["syntax-error"].append((repo, path, d))
            else:
                pool[d["name"]].append((repo, path, d))
            counts[d["name"]] += 1
    rng = random.Random(args.seed)
    sample = []
    for rule in sorted(pool):
        items = pool[rule]
        # Spread over repositories: round-robin over shuffled per-repo lists.
        by_repo = collections.defaultdict(list)
        for it in items:
            by_repo[it[0]].append(it)
        for lst in by_repo.values():
            rng.shuffle(lst)
        repos = sorted(by_repo)
        rng.shuffle(repos)
        chosen = []
        while len(chosen) < min(args.per_rule, len(items)):
            for r in repos:
                if by_repo[r] and len(chosen) < args.per_rule:
                    chosen.append(by_repo[r].pop())
        sample.extend(chosen)
    print(f"# {sum(counts.values())} findings in {args.root}; sampled {len(sample)}\n")
    for rule, n in counts.most_common():
        print(f"  {n:5}  {rule}")
    rows = []
    for i, (repo, path, d) in enumerate(sample, 1):
        loc = f"{d['filename']}:{'cell ' + str(d['cell']) + ':' if d.get('cell') else ''}{d['location']['row']}"
        print(f"\n## {i}. {d['name']} ({d['severity']}) {repo}/{loc}\n{d['message']}")
        print(context(path, d, args.context))
        rows.append((i, d["name"], d["severity"], repo, loc, d["message"].replace("\t", " ")))
    if args.tsv:
        with open(args.tsv, "w", encoding="utf-8") as f:
            f.write("n\trule\tseverity\trepo\tlocation\tmessage\tverdict\tnote\n")
            for r in rows:
                f.write("\t".join(str(x) for x in r) + "\t\t\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
