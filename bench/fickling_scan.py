#!/usr/bin/env python3
"""Scan files or directories with fickling's Python API, in one process (run with the peers venv).

fickling 0.1.12's CLI (`fickling --check-safety FILE`) reads FILE as a raw pickle stream only:
on a torch zip checkpoint it stops with "No pickle files detected", and it takes one file per
process. Its library does handle zips (`fickling.scan_zip_archive`, members .pkl/.pickle/.bin),
so the benchmark drives that, the way a directory scan in fickling would work.
Exit status: 0 all likely safe, 1 something rated above LIKELY_SAFE or a scan error.
"""

import os
import sys
import zipfile

import fickling
from fickling.analysis import Severity


def iter_files(paths):
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    yield os.path.join(root, name)
        else:
            yield path


def main(argv):
    flagged = scanned = 0
    for path in iter_files(argv):
        if path.endswith(".json"):
            continue
        scanned += 1
        if zipfile.is_zipfile(path):
            results = list(fickling.scan_zip_archive(path, graceful=True).values())
        else:
            results = [fickling.scan_file(path, graceful=True)]
        if any(r.severity > Severity.LIKELY_SAFE or r.errors for r in results):
            flagged += 1
            print(f"{path}: {max(r.severity for r in results).name}" if results else f"{path}: ERROR")
    print(f"scanned {scanned} files, flagged {flagged}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
