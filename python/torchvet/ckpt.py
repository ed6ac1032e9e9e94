"""Checkpoints, read without ever unpickling them: ``scan``, ``inspect``, ``diff``.

    >>> from torchvet import ckpt
    >>> [(f["path"], f["verdict"]) for f in ckpt.scan(["checkpoints/"])]
    [('checkpoints/model.pt', 'safe')]
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from torchvet._run import PathLike, paths_arg, run_json

__all__ = ["diff", "inspect", "scan"]


def scan(paths: PathLike | Sequence[PathLike], *, cwd: PathLike | None = None) -> List[Dict[str, Any]]:
    """Scan checkpoint files (directories are walked) for code that would run when they are
    loaded. One dict per file, with ``verdict`` (``safe``, ``unsafe``, ``dangerous`` or
    ``malformed``), ``format``, ``findings`` and the imported ``globals``."""
    args = ["ckpt", "scan", *paths_arg(paths), "--format", "json", "--fail-on", "never"]
    return run_json(args, cwd=cwd, ok_codes=(0,))


def inspect(path: PathLike, *, cwd: PathLike | None = None) -> Dict[str, Any]:
    """What a checkpoint holds: tensors (name, dtype, shape), shared storages, parameter
    counts and metadata. Reads only the pickle and the archive directory."""
    return run_json(["ckpt", "inspect", str(path), "--format", "json"], cwd=cwd, ok_codes=(0,))


def diff(
    a: PathLike,
    b: Optional[PathLike] = None,
    *,
    against: Optional[str] = None,
    key: Optional[str] = None,
    values: bool = False,
    cwd: PathLike | None = None,
) -> Dict[str, Any]:
    """Compare two checkpoints the way ``load_state_dict`` would (missing and unexpected
    keys, shape and dtype mismatches; with ``values``, the largest absolute difference), or
    checkpoint ``a`` with the ``state_dict`` of a model class (``against="net.py::Net"``)."""
    if (b is None) == (against is None):
        raise ValueError("give exactly one of `b` and `against`")
    args = ["ckpt", "diff", str(a)]
    if b is not None:
        args.append(str(b))
    if against is not None:
        args.append("--against=" + against)
    if key is not None:
        args.append("--key=" + key)
    if values:
        args.append("--values")
    args += ["--format", "json"]
    return run_json(args, cwd=cwd, ok_codes=(0, 1))
