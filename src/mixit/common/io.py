"""Output folders and atomic writes: a reader sees the old file (or no folder) or the complete
new one, never half of it; a folder that cannot be made is the user's error, not a traceback."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError


def make_dir(path: str | Path) -> Path:
    """Create the folder ``path`` (and its parents) if needed; a path that cannot be made (a
    file in the way, no permission, a read-only or special file system) is a UsageError."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path} exists and is not a folder; name a folder to write into")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"cannot create the folder {path}: {error.strerror}") from None
    return path


def follow_umask(path: Path) -> None:
    """Give ``path`` the mode the umask gives a new file: mkstemp and safetensors make 0600
    files, which teammates sharing a run could not read."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def write_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``.

    The file gets the permissions the umask gives a new file (``follow_umask``). A ``path``
    that is a device or a pipe (``--json /dev/stdout``) is written into, never replaced; a
    folder in the way, or a write that fails (no room, no permission), is a UsageError that
    names ``path`` and leaves no temporary file behind.
    """
    if path.is_dir():
        raise UsageError(f"{path} is a folder; name a file to write")
    try:
        if path.exists() and not path.is_file():
            write(path)
            return
        make_dir(path.parent)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            write(tmp)  # some writers (safetensors) make the file anew: set its mode after
            follow_umask(tmp)
            os.replace(tmp, path)  # replaces a symlink itself, never the file it points to
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}") from None


def write_folder_atomic(path: Path, fill: Callable[[Path], None]) -> None:
    """Call ``fill(staging)`` to make the folder ``staging`` beside ``path`` (it does not
    exist yet), then rename it to ``path``; a fill that fails or is interrupted leaves
    nothing behind, and one killed outright leaves only the staging folder, which the next
    call removes."""
    staging = path.with_name(f".{path.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        fill(staging)
        staging.mkdir(parents=True, exist_ok=True)  # a fill with nothing to write
        staging.rename(path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def committed_results(folder: Path) -> Path | None:
    """The ``results/`` folder of a git work tree that ``folder`` lies in, its links resolved
    (where a project keeps its committed outputs); None elsewhere."""
    resolved = folder.resolve()
    for above in (resolved, *resolved.parents):
        if above.name == "results" and (above.parent / ".git").exists():
            return above
    return None


def check_writable(path: Path) -> None:
    """Refuse, before any work, a file ``path`` that cannot be written: a folder in its place,
    or a nearest existing folder above it that this user cannot write into."""
    if path.is_dir():
        raise UsageError(f"{path} is a folder; name a file to write")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UsageError(f"cannot write {path}: Permission denied")
        return
    above = path.parent
    while not above.exists():
        above = above.parent
    if not above.is_dir() or not os.access(above, os.W_OK):
        raise UsageError(f"cannot write {path}: {above} is not a folder this user can write in")


def append_line(path: Path, line: str) -> None:
    """Append ``line`` to ``path``, refusing to follow a symlink planted in its place."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as error:
        raise UsageError(f"cannot append to {path}: {error.strerror}") from None
    with os.fdopen(fd, "a") as handle:
        handle.write(line + "\n")


class DirLock:
    """An exclusive lock on a run directory for as long as one process writes it: a second
    writer is refused at once. The kernel drops the lock when the holder exits, crash or not."""

    def __init__(self, folder: Path) -> None:
        import fcntl

        self._handle = (make_dir(folder) / ".lock").open("a")
        try:
            fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._handle.close()
            raise UsageError(
                f"{folder} is being written by another mixit process; wait for it or use "
                "another --out"
            ) from None

    def release(self) -> None:
        self._handle.close()


@contextlib.contextmanager
def command_lock(out: Path, command: str) -> Iterator[None]:
    """Hold, for a whole command, the one lock on the folder ``out`` resolves to (links
    followed): a second command that would write there is refused at once, naming the first
    (its pid and command). The lock file lives outside the folder (in the temporary
    directory, named by the folder's resolved path), so a refused command leaves nothing in
    it; the kernel drops the lock when its holder exits, crash or not."""
    import fcntl

    where = str(Path(out).resolve())
    locks = make_dir(Path(tempfile.gettempdir()) / f"mixit-locks-{os.getuid()}")
    handle = (locks / f"{hashlib.sha256(where.encode()).hexdigest()[:20]}.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another mixit process"
        handle.close()
        raise UsageError(
            f"{out} ({where}) is being written by {holder}; wait for it, or use another --out"
        ) from None
    try:
        handle.truncate(0)
        handle.write(f"process {os.getpid()} (mixit {command})")
        handle.flush()
        yield
    finally:
        handle.close()


# A value as JSON holds it, and an object of them: what the files mixit writes are made of.
JSONValue = str | int | float | bool | None | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject = dict[str, JSONValue]


def read_json(path: str | Path, what: str) -> Any:
    """The JSON in ``path``: a file that cannot be read, or is not UTF-8 JSON, is a UsageError
    that names it as ``what`` (e.g. "--tuned best.json") and says which."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise UsageError(f"{what}: cannot read it: {error.strerror}") from None
    except ValueError:  # not UTF-8, or not JSON
        raise UsageError(f"{what}: is not a UTF-8 JSON file") from None


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A hidden folder inside ``out`` to write a set of files into: when the block ends
    cleanly, each moves to the same place under ``out`` (a rename, so each is whole); when it
    raises, none does. Either way the folder goes: files written from what a stored file holds
    are written all, or not at all."""
    stage = Path(tempfile.mkdtemp(prefix=".staged.", dir=make_dir(out)))
    try:
        yield stage
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            target = out / path.relative_to(stage)
            make_dir(target.parent)
            os.replace(path, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


# What a stored file of the right types but inconsistent with itself (a model in one list and
# not another, lists of different lengths) raises when a report reads it.
# StopIteration: a row that one part of a file names and another part lacks (``next``).
READ_ERRORS = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    ZeroDivisionError,
    StopIteration,
)


@contextlib.contextmanager
def staged_from_stored(out: Path, what: str, remedy: str) -> Iterator[Path]:
    """``staged``, for files written from stored ones (``what``: "a compare.json"): one that
    is inconsistent with itself (``READ_ERRORS``) is one UsageError, and nothing is written."""
    with staged(out) as stage:
        try:
            yield stage
        except READ_ERRORS as error:
            raise UsageError(
                f"{what} in {out} is not one this version reads ({error!r}); {remedy}"
            ) from None


def read_record(path: str | Path, shape: Any, what: str, remedy: str) -> Any:
    """The JSON in ``path`` (``read_json``) held to ``shape``, the TypedDict of the file's keys
    (pydantic, strictly: no value converted): a value of another type, or a key the shape
    requires and the file lacks, is a UsageError naming the place, ending in ``remedy``. The
    file's own value is returned, with any key the shape does not name."""
    return checked_record(read_json(path, what), shape, what, remedy)


def checked_record(value: Any, shape: Any, what: str, remedy: str) -> Any:
    """``value``, read from a stored file named ``what``, held to ``shape`` (``read_record``)."""
    from pydantic import ValidationError

    try:
        _adapter(shape).validate_python(value, strict=True)
    except ValidationError as error:
        first = error.errors()[0]
        place = ".".join(map(str, first["loc"])) or "the whole file"
        ending = f"; {remedy}" if remedy else ""
        raise UsageError(f"{what}: {place}: {first['msg'].lower()}{ending}") from None
    return value


@functools.cache
def _adapter(shape: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(shape)


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2) + "\n"))


def write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text))
