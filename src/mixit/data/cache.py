"""A disk cache for derived arrays (token ids), written atomically and rebuilt when damaged."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from filelock import FileLock

from mixit.common.errors import UsageError
from mixit.common.io import make_dir


def default_cache_dir(configured: str = "") -> Path:
    """``configured`` (a task's ``cache_dir``) if given, else ``$MIXIT_CACHE``, else
    ``~/.cache/mixit``."""
    if configured:
        return Path(configured)
    return Path(os.environ.get("MIXIT_CACHE") or Path.home() / ".cache" / "mixit")


def cache_key(**parts: object) -> str:
    """A short, stable name for everything an artifact depends on (sorted-key JSON, sha256)."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def unwritable(path: Path, error: OSError) -> UsageError:
    """The one line for a cache file that cannot be written."""
    return UsageError(
        f"cannot write the cache {path}: {error.strerror}; set task.cache_dir or "
        "$MIXIT_CACHE to a writable folder"
    )


@contextmanager
def building(path: Path) -> Iterator[None]:
    """Held while ``path`` is built: another process that needs the same file (a worker of
    ``--jobs``, a second command) waits for this one and reads what it wrote, instead of
    building it beside it on the same cores."""
    make_dir(path.parent)
    try:
        lock = FileLock(path.with_name(f".{path.name}.lock"))
        lock.acquire()
    except OSError as error:
        raise unwritable(path, error) from None
    try:
        yield
    finally:
        lock.release()


def _load(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError):
        # Truncated or corrupted (an interrupted writer from before atomic writes, a full disk).
        return None


def cached_array(path: Path, build: Callable[[], np.ndarray], ndim: int) -> np.ndarray:
    """Return the array saved at ``path`` (a read-only memmap), building and saving it if needed.

    A file that does not hold integer token ids of ``ndim`` dimensions (damaged, or written by
    something else) is rebuilt. The file is written under a temporary name in the same
    directory and renamed into place, so concurrent runs and interrupted writes never leave a
    half-written ``path``.
    """
    path = Path(path)
    if (array := _valid(path, ndim)) is not None:
        return array
    with building(path):
        if (array := _valid(path, ndim)) is not None:  # built while this process waited
            return array
        _save(path, np.asarray(build()))
    return np.load(path, mmap_mode="r")


def _valid(path: Path, ndim: int) -> np.ndarray | None:
    """The integer array of ``ndim`` dimensions saved at ``path``, or None."""
    array = _load(path) if path.exists() else None
    if array is not None and array.ndim == ndim and np.issubdtype(array.dtype, np.integer):
        return array
    return None


def _save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except OSError as error:
        raise unwritable(path, error) from None
    finally:
        tmp.unlink(missing_ok=True)


def file_fingerprint(data_files: str) -> list[list[object]]:
    """(absolute path, size, mtime) of each comma-separated file that exists.

    Part of every cache key built from user files, so editing a file invalidates its cache.
    """
    fingerprint: list[list[object]] = []
    for name in (f.strip() for f in data_files.split(",") if f.strip()):
        path = Path(name).resolve()
        stat = path.stat() if path.is_file() else None
        fingerprint.append(
            [str(path), stat.st_size if stat else -1, stat.st_mtime_ns if stat else -1]
        )
    return fingerprint
