"""torchvet: the PyTorch expert, as one fast program.

The ``torchvet`` executable comes with this package (``torchvet --help``, or
``python -m torchvet --help``). This module is a small API over it for scripts and pipelines:
each function runs the executable with JSON output and returns (or yields) plain dicts, the
same objects ``--output-format json`` prints. Nothing here imports or runs the code it checks.

    >>> import torchvet
    >>> for finding in torchvet.check(["src/"], select=["correctness"]):
    ...     print(finding["filename"], finding["location"]["row"], finding["name"])
    >>> [f["verdict"] for f in torchvet.ckpt.scan(["model.pt"])]
    ['safe']
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, TypedDict

from torchvet import ckpt
from torchvet._find import BinaryNotFound, find_torchvet_bin
from torchvet._run import PathLike, TorchvetError, iter_json_lines, paths_arg, run, run_json

__all__ = [
    "BinaryNotFound",
    "Finding",
    "TorchvetError",
    "check",
    "ckpt",
    "find_torchvet_bin",
    "iter_check",
    "project",
    "review",
    "rule",
    "rules",
    "summary",
    "version",
]


class Location(TypedDict):
    """A 1-based position: ``row`` is the line, ``column`` counts characters."""

    row: int
    column: int


class Edit(TypedDict):
    """One replacement of a fix."""

    content: str
    location: Location
    end_location: Location


class Fix(TypedDict):
    """A fix: ``applicability`` is ``safe``, ``unsafe`` or ``display-only``."""

    applicability: str
    message: str
    edits: List[Edit]


class Finding(TypedDict, total=False):
    """One finding, as ``torchvet check --output-format json`` prints it."""

    code: str
    name: str
    severity: Literal["critical", "warning", "info"]
    message: str
    filename: str
    location: Location
    end_location: Location
    cell: Optional[int]
    fix: Optional[Fix]
    url: str
    related: List[Dict[str, Any]]


def _check_args(
    paths: PathLike | Sequence[PathLike] | None,
    select: Sequence[str] | None,
    extend_select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    preview: bool,
    target_torch: str | None,
    config: PathLike | None,
    isolated: bool,
    fix: bool,
    unsafe_fixes: bool,
    output_format: str,
) -> list[str]:
    args = ["check", *paths_arg(paths), "--output-format", output_format]
    if select is not None:
        args.append("--select=" + ",".join(select))
    if extend_select:
        args.append("--extend-select=" + ",".join(extend_select))
    if ignore:
        args.append("--ignore=" + ",".join(ignore))
    if preview:
        args.append("--preview")
    if target_torch:
        args.append("--target-torch=" + target_torch)
    if config is not None:
        args.extend(["--config", str(config)])
    if isolated:
        args.append("--isolated")
    if fix:
        args.append("--fix")
    if unsafe_fixes:
        args.append("--unsafe-fixes")
    return args


def check(
    paths: PathLike | Sequence[PathLike] | None = None,
    *,
    select: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    preview: bool = False,
    target_torch: str | None = None,
    config: PathLike | None = None,
    isolated: bool = False,
    fix: bool = False,
    unsafe_fixes: bool = False,
    cwd: PathLike | None = None,
) -> list[Finding]:
    """Lint Python files and notebooks; return the findings.

    Args:
        paths: files or directories (default: the current directory).
        select: rules replacing the default selection: names, codes (``TV007``), code
            prefixes, groups (``correctness``), TorchFix codes (``TOR102``) or ``ALL``.
        extend_select: rules enabled on top of the selection.
        ignore: rules disabled.
        preview: enable preview rules.
        target_torch: the torch version the code targets (``"2.1"``).
        config: use this configuration file instead of searching for one.
        isolated: ignore all configuration files.
        fix: apply safe fixes to the files (they are rewritten); the findings left are returned.
        unsafe_fixes: with ``fix``, also apply fixes that may change behaviour.
        cwd: directory to run in (relative paths and file names are relative to it).

    Returns:
        The findings, sorted by file and position (an empty list when the code is clean).

    Raises:
        TorchvetError: bad arguments or configuration, or a file that could not be read.
    """
    args = _check_args(
        paths, select, extend_select, ignore, preview, target_torch, config, isolated, fix,
        unsafe_fixes, "json",
    )
    return run_json(args, cwd=cwd)


def iter_check(
    paths: PathLike | Sequence[PathLike] | None = None,
    *,
    select: Sequence[str] | None = None,
    extend_select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    preview: bool = False,
    target_torch: str | None = None,
    config: PathLike | None = None,
    isolated: bool = False,
    cwd: PathLike | None = None,
) -> Iterator[Finding]:
    """Like :func:`check`, but yields the findings one by one as they are read (JSON lines),
    for large trees. Never writes files."""
    args = _check_args(
        paths, select, extend_select, ignore, preview, target_torch, config, isolated, False,
        False, "json-lines",
    )
    return iter_json_lines(args, cwd=cwd)


def review(
    paths: PathLike | Sequence[PathLike] | None = None,
    *,
    format: Literal["json", "markdown", "html"] = "json",
    cwd: PathLike | None = None,
) -> Any:
    """The reviewer's report: critical issues, performance, best practices, positive aspects,
    tests to write. Returns a dict for ``format="json"``, else the Markdown or HTML text."""
    args = ["review", *paths_arg(paths), "--format", format]
    if format == "json":
        return run_json(args, cwd=cwd, ok_codes=(0,))
    return run(args, cwd=cwd, ok_codes=(0,))


def project(directory: PathLike = ".", *, cwd: PathLike | None = None) -> Dict[str, Any]:
    """Detect a PyTorch project and describe it (triggers, torch version, model, training
    and checkpoint directories, commands), each fact with its evidence."""
    return run_json(["project", str(directory), "--format", "json"], cwd=cwd, ok_codes=(0,))


def summary(target: str, *, cwd: PathLike | None = None) -> List[Dict[str, Any]]:
    """Static model cards for the ``nn.Module`` classes of ``FILE.py`` or ``FILE.py::Class``:
    layer tree, parameter counts, expected ``state_dict``. Nothing is imported."""
    return run_json(["summary", target, "--format", "json"], cwd=cwd, ok_codes=(0,))


def rules() -> List[Dict[str, Any]]:
    """Every rule: name, code, group, severity, title, default, status, autofix, docs."""
    return run_json(["rules", "--format", "json"], ok_codes=(0,))


def rule(name: str) -> Dict[str, Any]:
    """One rule's record and documentation, by name, code (``TV007``) or TorchFix code."""
    return run_json(["rule", name, "--format", "json"], ok_codes=(0,))


def version() -> str:
    """The torchvet executable's version (e.g. ``"0.1.0"``)."""
    return run(["--version"], ok_codes=(0,)).split()[-1]
