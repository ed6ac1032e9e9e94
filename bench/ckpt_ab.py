#!/usr/bin/env python3
"""Interleaved A/B timing of `torchvet ckpt scan` builds against picklescan.

Each round runs every tool once on the same input, in turn (the order rotates from round to
round), so that load from other processes falls on all of them alike; medians of wall and CPU time (user + sys of the child) are printed
with the ratio picklescan / torchvet. Inputs are the bench checkpoint set made by `bench/run`.

    bench/ckpt_ab.py BEFORE_BINARY AFTER_BINARY [--rounds-small 15] [--rounds-large 5]

Standard library only.
"""
import argparse
import os
import statistics
import subprocess
import time

CACHE = os.environ.get("TORCHVET_BENCH_CACHE", os.path.expanduser("~/.cache/torchvet-bench"))


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/tmp")
    _, _, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds-small", type=int, default=15)
    ap.add_argument("--rounds-large", type=int, default=5)
    a = ap.parse_args()
    ck = os.path.join(CACHE, "ckpt")
    sets = [
        ("100 small", os.path.join(CACHE, "subsets", "ckpt-small-100"), a.rounds_small),
        ("1,000 small", os.path.join(ck, "small"), a.rounds_large),
        ("llm-1g.pt", os.path.join(ck, "large", "llm-1g.pt"), a.rounds_small),
        ("whole set", ck, a.rounds_large),
    ]
    tools = [
        ("before", [a.before, "ckpt", "scan"]),
        ("after", [a.after, "ckpt", "scan"]),
        ("picklescan", [os.path.join(CACHE, "peers", "bin", "picklescan"), "-p"]),
    ]
    for name, path, rounds in sets:
        if not os.path.exists(path):
            print(f"{name}: {path} missing (run bench/run --prepare-only)")
            continue
        samples = {t: [] for t, _ in tools}
        for _, cmd in tools:
            run(cmd + [path])  # warm-up
        for r in range(rounds):
            # The order rotates: whoever runs right after picklescan meets colder caches.
            for t, cmd in tools[r % 3:] + tools[:r % 3]:
                samples[t].append(run(cmd + [path]))
        med = {t: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
                   max(x[2] for x in v)) for t, v in samples.items()}
        pw, pc, _ = med["picklescan"]
        for t in ("before", "after"):
            w, c, m = med[t]
            print(f"{name:12s} {t:7s} wall {w * 1000:8.2f} ms  cpu {c * 1000:8.2f} ms  rss {m:5.1f} MB"
                  f"  | picklescan/torchvet: wall {pw / w:6.1f}x  cpu {pc / c:6.1f}x")
        print(f"{name:12s} picklescan wall {pw * 1000:8.1f} ms  cpu {pc * 1000:8.1f} ms"
              f"  (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
