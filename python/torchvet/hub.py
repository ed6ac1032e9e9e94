"""Scanning many checkpoints at once: a batch function for distributed engines.

``scan_batch`` takes a batch of paths in the shape Ray Data (``Dataset.map_batches``), pandas
and plain Python use (a mapping from column name to a sequence) and returns one row per path,
with flat columns that any columnar writer accepts (JSON lines, Parquet). One ``torchvet ckpt
scan`` process serves the whole batch, so the executable's start-up is paid once per batch,
not per file. Nothing is ever unpickled.

    >>> import ray
    >>> from torchvet.hub import scan_batch
    >>> ds = ray.data.from_items([{"path": p} for p in paths])
    >>> ds.map_batches(scan_batch, batch_size=256).write_json("scan-results/")

Each row: ``path``, ``verdict`` (``safe``, ``unsafe``, ``dangerous``, ``malformed``, or
``error`` when the file could not be read), ``format``, ``size``, ``findings`` and ``globals``
(both as JSON text, so that every row has the same flat schema), and ``error`` (the reason,
or an empty string).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Sequence

from torchvet import ckpt
from torchvet._run import TorchvetError

__all__ = ["COLUMNS", "scan_batch"]

#: The columns of every row ``scan_batch`` returns, in order.
COLUMNS = ("path", "verdict", "format", "size", "findings", "globals", "error")


def _row(path: str, report: Dict[str, Any] | None, error: str = "") -> Dict[str, Any]:
    if report is None:
        return {
            "path": path,
            "verdict": "error",
            "format": "",
            "size": -1,
            "findings": "[]",
            "globals": "[]",
            "error": error,
        }
    return {
        "path": path,
        "verdict": report["verdict"],
        "format": report.get("format") or "",
        "size": int(report.get("size", -1)),
        "findings": json.dumps(report.get("findings", []), sort_keys=True),
        "globals": json.dumps(report.get("globals", [])),
        "error": "",
    }


def _scan_one(path: str) -> Dict[str, Any]:
    try:
        reports = ckpt.scan([path])
    except TorchvetError as e:
        return _row(path, None, str(e).strip() or f"exit status {e.returncode}")
    if len(reports) != 1:
        return _row(path, None, f"expected one report, got {len(reports)}")
    return _row(path, reports[0])


def scan_batch(batch: Mapping[str, Sequence[Any]], column: str = "path") -> Dict[str, List[Any]]:
    """Scan the checkpoint files named in ``batch[column]`` (files, not directories).

    Returns a mapping from each name in :data:`COLUMNS` to a list with one entry per input
    path, in input order. A path that is missing or cannot be read gets the verdict
    ``error`` and the reason in ``error``; it never fails the batch.
    """
    paths = [os.fspath(p) for p in batch[column]]
    readable = [p for p in dict.fromkeys(paths) if os.path.isfile(p)]
    reports: Dict[str, Dict[str, Any]] = {}
    if readable:
        try:
            # One process for the batch; each report names its path as it was given.
            reports = {r["path"]: r for r in ckpt.scan(readable)}
        except TorchvetError:
            # A file vanished or became unreadable after the check above: the files are
            # scanned one by one below, so that only that file is reported as an error.
            reports = {}
    rows: List[Dict[str, Any]] = []
    for p in paths:
        if p in reports:
            rows.append(_row(p, reports[p]))
        elif not os.path.isfile(p):
            rows.append(_row(p, None, "no such file"))
        else:
            rows.append(_scan_one(p))
    return {c: [r[c] for r in rows] for c in COLUMNS}
