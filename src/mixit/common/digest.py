"""What a run reads besides its config, as one digest: a user's data files, or the source of
a data generator or a model factory. A run directory's name covers it
(``mixit.running.runs.run_dir_name``), so that editing one of them trains anew instead of
reusing a finished run that read the old version."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from importlib.machinery import PathFinder
from pathlib import Path

MISSING = "missing"


def module_file(module_name: str, path: Sequence[str] | None = None) -> Path | None:
    """The source file of a module (a dotted name, or the path of a ``.py`` file), found on
    ``path`` (default ``sys.path``) without importing it or its packages: nothing runs to
    name it. None where it is not found or has no file (a builtin)."""
    if module_name.endswith(".py"):
        return Path(module_name)
    parts = module_name.split(".")
    search = None if path is None else list(path)
    for depth in range(1, len(parts) + 1):
        spec = PathFinder.find_spec(".".join(parts[:depth]), search)
        if spec is None:
            return None
        if depth < len(parts):
            search = list(spec.submodule_search_locations or [])
    return Path(spec.origin) if spec.origin and spec.has_location else None


def source_files(module_name: str) -> tuple[Path, ...]:
    """``module_file`` as the files a run reads: none where the module has no file."""
    source = module_file(module_name)
    return () if source is None else (source,)


def files_digest(paths: Iterable[Path]) -> str:
    """One hex digest of the contents of ``paths`` in order ("" for none), a file that does
    not exist counted as missing."""
    digests = [_file_digest(*_stamp(Path(path))) for path in paths]
    if not digests:
        return ""
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def _stamp(path: Path) -> tuple[str, int, int]:
    """The path with its size and modification time: a file unchanged since it was last read
    is not read again."""
    if not path.is_file():
        return str(path), -1, -1
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    if size < 0:
        return MISSING
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
