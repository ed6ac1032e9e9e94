"""``python -m torchvet ...`` runs the torchvet executable with the same arguments."""

from __future__ import annotations

import os
import subprocess
import sys

from torchvet._find import BinaryNotFound, find_torchvet_bin


def main() -> int:
    try:
        exe = find_torchvet_bin()
    except BinaryNotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if sys.platform == "win32":
        return subprocess.call([exe, *sys.argv[1:]])
    # Replace this process, so signals, the exit code and the terminal go straight through.
    os.execv(exe, [exe, *sys.argv[1:]])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
