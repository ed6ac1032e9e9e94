"""Locate the ``torchvet`` executable that was installed with this package."""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Iterator

_EXE = "torchvet" + (".exe" if sys.platform == "win32" else "")


class BinaryNotFound(FileNotFoundError):
    """The ``torchvet`` executable could not be found."""


def _candidates() -> Iterator[Path]:
    override = os.environ.get("TORCHVET_BINARY")
    if override:
        yield Path(override)
    # Where pip put the package's scripts: the environment's own scheme, then the
    # user scheme (``pip install --user``).
    schemes = [sysconfig.get_default_scheme()] if hasattr(sysconfig, "get_default_scheme") else []
    user = "nt_user" if os.name == "nt" else "posix_user"
    if sys.platform == "darwin" and sys._framework:  # type: ignore[attr-defined]
        user = "osx_framework_user"
    schemes.append(user)
    for scheme in schemes:
        try:
            scripts = sysconfig.get_path("scripts", scheme=scheme)
        except KeyError:
            continue
        if scripts:
            yield Path(scripts) / _EXE
    # ``pip install --target DIR`` / ``--prefix``: the scripts land in a ``bin`` beside
    # or above the package directory.
    here = Path(__file__).resolve().parent
    for up in (here.parent, here.parent.parent, here.parent.parent.parent):
        yield up / "bin" / _EXE
        yield up / "Scripts" / _EXE
    found = shutil.which(_EXE)
    if found:
        yield Path(found)


def find_torchvet_bin() -> str:
    """Return the path of the ``torchvet`` executable.

    ``TORCHVET_BINARY`` in the environment takes precedence; then the scripts directory of
    the environment this package is installed in; then ``PATH``.

    Raises:
        BinaryNotFound: when no executable is found.
    """
    for path in _candidates():
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise BinaryNotFound(
        "the torchvet executable was not found; reinstall the package "
        "(`pip install --force-reinstall torchvet`) or set TORCHVET_BINARY"
    )
