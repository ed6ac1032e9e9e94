"""Run the torchvet executable and read its JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any, Iterator, Sequence, Union

from torchvet._find import find_torchvet_bin

PathLike = Union[str, "os.PathLike[str]"]


class TorchvetError(RuntimeError):
    """torchvet could not do what was asked (bad arguments, unreadable input, ...).

    Attributes:
        returncode: the executable's exit code.
        stderr: what it printed on standard error.
    """

    def __init__(self, message: str, returncode: int, stderr: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def paths_arg(paths: PathLike | Sequence[PathLike] | None) -> list[str]:
    """Normalize one path or a sequence of paths to a list of strings."""
    if paths is None:
        return []
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def run(args: Sequence[str], cwd: PathLike | None = None, ok_codes: Sequence[int] = (0, 1)) -> str:
    """Run ``torchvet ARGS`` and return its standard output.

    Raises:
        TorchvetError: when the exit code is not in ``ok_codes``.
    """
    proc = subprocess.run(
        [find_torchvet_bin(), *args],
        cwd=os.fspath(cwd) if cwd is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )
    if proc.returncode not in ok_codes:
        message = proc.stderr.strip() or f"torchvet exited with status {proc.returncode}"
        raise TorchvetError(message, proc.returncode, proc.stderr)
    return proc.stdout


def run_json(args: Sequence[str], cwd: PathLike | None = None, ok_codes: Sequence[int] = (0, 1)) -> Any:
    """Run ``torchvet ARGS`` (which must print JSON) and decode its output."""
    out = run(args, cwd=cwd, ok_codes=ok_codes)
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        raise TorchvetError(f"torchvet printed something that is not JSON: {e}", 0, "") from e


def iter_json_lines(args: Sequence[str], cwd: PathLike | None = None) -> Iterator[Any]:
    """Run ``torchvet ARGS`` (which must print JSON lines) and yield each decoded line as it
    arrives."""
    # Standard error goes to a file, so a chatty run cannot block on a full pipe.
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err, subprocess.Popen(
        [find_torchvet_bin(), *args],
        cwd=os.fspath(cwd) if cwd is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=err,
        text=True,
        encoding="utf-8",
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip():
                yield json.loads(line)
        code = proc.wait()
        err.seek(0)
        stderr = err.read()
    if code not in (0, 1):
        raise TorchvetError(stderr.strip() or f"torchvet exited with status {code}", code, stderr)
