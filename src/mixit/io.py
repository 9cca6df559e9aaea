"""Output folders and atomic file writes: a reader sees the old file or the complete new one,
never half of it; a folder that cannot be made is the user's error, not a traceback."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mixit.errors import UsageError


def make_dir(path: str | Path) -> Path:
    """Create the folder ``path`` (and its parents) if needed; a path that cannot be made (a
    file in the way, no permission, a read-only or special file system) is a UsageError."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the folder {path}: {error.strerror}") from None
    return path


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``."""
    make_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2) + "\n"))


def write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text))
