"""A kept output's runs/ folders as one archive, ``records.tar.gz``, which is how ``results/``
keeps them (thousands of small files become one; the same files always give the same bytes),
and the way back: ``restore`` copies every kept file, and every file of the archive, to the
same place under an output where it lacks it (a file the output has is at least as far along).

With ``figures``, the archive also takes the figures no report stands beside: each PDF that
has its PNG beside it (the vector copy, for a paper) and each PNG in a folder that holds no
report (no Markdown file), and the measurement caches (``measurement_cache``), which a later
call reuses instead of measuring again and no reader reads. A reader of the committed output
sees every figure beside its reports; ``restore`` brings the rest back, as ``--no-train``
would write them.

With ``retire`` as well, the archive takes every figure: for an output a later one supersedes,
whose reports, claims and values stay readable where they are and whose figures are read
after ``restore``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
from pathlib import Path

from mixit.common.errors import UsageError
from mixit.common.io import write_atomic
from mixit.running.records import KEPT_NOTES, cut_off, record_folders, refuse_links
from mixit.training.checkpoint import CHECKPOINT

# The one file that holds a kept output's runs/ folders (``pack``).
ARCHIVE = "records.tar.gz"


def restore(kept: Path, out: Path) -> tuple[int, int]:
    """Copy every file of KEPT but its README.md and archive, and every file of its archive, to
    the same place under OUT where OUT has none (each under a temporary name, then renamed);
    the files copied, and those OUT had. The archive is read whole first, so a damaged one
    leaves OUT as it was."""
    refuse_links(kept)
    archived = archived_files(kept)
    left_out = {Path(KEPT_NOTES), Path(ARCHIVE)}
    files = [
        path
        for path in sorted(kept.rglob("*"))
        if path.is_file() and path.relative_to(kept) not in left_out
    ]
    copied = 0
    for path in files:
        target = out / path.relative_to(kept)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".partial")
            shutil.copy2(path, partial)
            os.replace(partial, target)
            copied += 1
    copied += write_missing(out, archived)
    return copied, len(files) + len(archived) - copied


def write_missing(into: Path, files: list[tuple[str, bytes]]) -> int:
    """Each ``(path, bytes)`` written under ``into`` where it has no such file
    (``write_atomic``); the files written."""
    written = 0
    for name, data in files:
        if not (into / name).exists():
            write_atomic(into / name, lambda tmp, data=data: tmp.write_bytes(data))
            written += 1
    return written


def archived_files(output: Path) -> list[tuple[str, bytes]]:
    """``(path under output, bytes)`` for every file of ``output``'s archive, in its order;
    [] where it has none. A damaged archive, or one that names a link or a path outside the
    output, is refused (``UsageError``)."""
    path = output / ARCHIVE
    if not path.is_file():
        return []
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = tar.getmembers()
            bad = [m.name for m in members if not m.isfile() or not _inside(m.name)]
            if bad:
                raise UsageError(f"{path} holds {bad[0]}, not a file inside its folder")
            return [(m.name, tar.extractfile(m).read()) for m in members]
    except (tarfile.TarError, OSError, EOFError) as error:
        raise UsageError(f"{path} is damaged ({error}); check it out again") from None


def _inside(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def unpack(output: Path, into: Path) -> int:
    """``output``'s archived runs written out under ``into`` (``output`` itself, or a copy of
    it) as the folders they were packed from, where ``into`` lacks them; the files written."""
    return write_missing(into, archived_files(output))


def _superseded(name: str, contents: dict[str, bytes], output: Path) -> bool:
    """Whether ``name`` is a checkpoint's file of a run since ended, and so reused from its text
    records: finished (its summary among ``contents``) or halted at its rung (not ``cut_off``)."""
    path = Path(name)
    if path.parent.name != CHECKPOINT:
        return False
    run = path.parent.parent
    if str(run / "summary.json") in contents:
        return True
    return (output / run / "config.json").is_file() and not cut_off(output / run)


def measurement_cache(path: Path) -> bool:
    """Whether ``path`` is a measurement's cache: JSON holding just its ``key`` and ``value``,
    as ``mixit.study.measures.cached_measurement`` writes it."""
    if path.suffix != ".json":
        return False
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and sorted(stored) == ["key", "value"]


def unshown_figures(output: Path) -> list[Path]:
    """The files of OUTPUT (outside its runs/ folders) that no reader reads: each PDF with its
    PNG beside it, each PNG in a folder without a Markdown file, and each measurement cache."""
    folders = record_folders(output)
    return [
        path
        for path in sorted(output.rglob("*"))
        if path.is_file()
        and not any(path.is_relative_to(folder) for folder in folders)
        and (
            (path.suffix == ".pdf" and path.with_suffix(".png").is_file())
            or (path.suffix == ".png" and not any(path.parent.glob("*.md")))
            or measurement_cache(path)
        )
    ]


def every_figure(output: Path) -> list[Path]:
    """The files of OUTPUT (outside its runs/ folders) that ``retire`` packs: its
    ``unshown_figures`` and every PNG and PDF a report shows."""
    folders = record_folders(output)
    shown = [
        path
        for path in sorted(output.rglob("*"))
        if path.is_file()
        and path.suffix in (".png", ".pdf")
        and not any(path.is_relative_to(folder) for folder in folders)
    ]
    return sorted(set(unshown_figures(output)) | set(shown))


def pack(output: Path, *, figures: bool = False, retire: bool = False) -> int:
    """OUTPUT's runs/ folders as one archive, ``OUTPUT/records.tar.gz``, with the files of an
    archive already there that the folders do not hold, with ``figures`` its
    ``unshown_figures``, and with ``retire`` ``every_figure``; the folders and figures go once
    it is in place (written under a
    temporary name, then renamed). Sorted, with no times or owners, so the same files give the
    same bytes. The files it holds."""
    folders = record_folders(output)
    for folder in folders:
        refuse_links(folder)
    if figures or retire:
        refuse_links(output)
    moved = every_figure(output) if retire else unshown_figures(output) if figures else []
    contents = dict(archived_files(output))
    for path in [p for folder in folders for p in sorted(folder.rglob("*"))] + moved:
        if path.is_file():
            contents[str(path.relative_to(output))] = path.read_bytes()
    contents = {n: d for n, d in contents.items() if not _superseded(n, contents, output)}

    def write(tmp: Path) -> None:
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as tar,
        ):
            for name in sorted(contents):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(contents[name]), 0o644
                tar.addfile(info, io.BytesIO(contents[name]))

    write_atomic(output / ARCHIVE, write)
    for folder in folders:
        shutil.rmtree(folder)
    for path in moved:
        path.unlink()
    return len(contents)
