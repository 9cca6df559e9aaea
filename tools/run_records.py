"""Keep the runs of an output folder as text, so a later checkout can go on from them.

A run directory holds weights and checkpoints (tens to hundreds of MB), which are not
committed, and three small text files: ``config.json``, ``metrics.jsonl`` and, once it is
finished, ``summary.json``. ``reproduce``, ``compare`` and the tuning protocol reuse a
finished run from those files alone (its summary and its metrics), except where a report
reads the trained weights (the width report's retrieval question, the analyses); and a
tuning trial halted at a rung from its evaluation there in ``metrics.jsonl``. This copies
the text files of every run of OUT into DEST/runs/; copying DEST/runs/ back into a new OUT
lets the same command train only what was not finished. What has to train on (a trial the
halving keeps, a run cut off) starts again from step 0, without its checkpoint: the same run
(``--resumable``, below, keeps the checkpoints of the runs cut off).

    python tools/run_records.py runs/width-depth-tuned results/width-depth-tuned
    cp -r results/width-depth-tuned/runs runs/width-depth-tuned/   # in a new checkout

``--weights PATTERN`` keeps, besides, for the runs whose directory names match PATTERN
(``fnmatch``; ``'*'`` for all), a finished run's ``model.safetensors`` and an unfinished
run's last complete checkpoint (``checkpoint/``): for runs whose reports read weights, or
which are long, a new output then reads the weights and goes on from the checkpoints instead
of training them again. Choose the runs dear to train again, and commit only those:

    python tools/run_records.py --weights 'khop-*' runs/presets-small-200 results/partial

``--resumable`` keeps the last checkpoint of each run cut off mid-way (stopped before its
budget and not halted at a tuning rung: the runs in flight when a long plan was stopped), so
that the same command resumes them there instead of training them again from step 0. Planned
runs checkpoint an eighth of their budget apart, so this is at most two or three checkpoints
for a plan stopped with as many jobs; a run finished later, or halted at its rung later, has
its archived checkpoint dropped at the next ``--pack``:

    python tools/run_records.py --suite --resumable runs/suite-llama-rules results/suite-llama-rules

A suite's output keeps one runs/ folder per task; ``--suite`` keeps each task's records in
DEST/TASK/runs/ beside its comparison files, and the suite's own reports (write them first
with ``mixit suite ... --report``), so DEST reads as the suite's output without weights. An
axis (``compare --axis``) keeps one runs/ folder per value in the same way. Into a DEST that
``tools/publish_results.py`` made, only the runs/ folders are added:

    mixit suite --arch hf:gpt2 --seeds 3 --out runs/suite-gpt2-tuned --report
    python tools/run_records.py --suite runs/suite-gpt2-tuned results/suite-gpt2-tuned

``--pack`` turns a kept output's runs/ folders (its own, and each task's for a suite) into one
archive beside them, ``records.tar.gz``, which is how ``results/`` keeps them (thousands of
small files become one); the same files always give the same bytes. Files of an archive
already there are kept, where the folders do not hold them anew:

    python tools/run_records.py --pack results/suite-gpt2-tuned

``--restore`` goes the other way, for a suite's records or a plain output's alike: every file
kept in DEST (its README.md aside), and every file of its archive, is copied to the same place
under OUT, where OUT lacks it (a file OUT already has is at least as far along, and stays):

    python tools/run_records.py --restore results/suite-gpt2-tuned runs/suite-gpt2-tuned

Exit status 2, with one line, when OUT has no runs/ folder (with ``--suite``: no task with
one) or DEST/runs/ (DEST/TASK/runs/) exists; with ``--pack``, when OUTPUT has no runs/ folder; with
``--restore``, when DEST holds neither a runs/ folder, at its top or one level down, nor an
archive; and for an archive that is damaged or names a file outside its folder.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path
from typing import NamedTuple

from mixit.cli import run_tool
from mixit.cli.options import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_atomic, write_folder_atomic
from mixit.running.runs import halted_on_disk
from mixit.training.checkpoint import CHECKPOINT, latest_checkpoint
from mixit.training.resolve import stored_config

RUNS = "runs"
RECORDS = ("config.json", "metrics.jsonl", "summary.json")
WEIGHTS = "model.safetensors"
# The hand-written account of the kept records, which is not part of any output.
KEPT_NOTES = "README.md"
# What a suite writes beside its tasks' runs, per task and for the whole suite.
TASK_FILES = ("compare.json", "results.csv", "tuning.json")
SUITE_FILES = ("results.csv", "heatmap.png", "summary.md", "suite.json")
# The one file that holds a kept output's runs/ folders (``pack``).
ARCHIVE = "records.tar.gz"


def copy_file(source: Path, target: Path) -> None:
    """``shutil.copy2`` of a plain file: a link (a shared folder's ``summary.json`` pointing at
    a file elsewhere) is refused, as mixit refuses it."""
    if source.is_symlink():
        raise UsageError(f"{source} is a link; run records are copied from plain files only")
    shutil.copy2(source, target)


def refuse_links(folder: Path) -> None:
    """Refuse ``folder`` when anything under it is a link (before a copy of it starts)."""
    for path in (folder, *folder.rglob("*")):
        if path.is_symlink():
            raise UsageError(f"{path} is a link; run records are copied from plain files only")


class Kept(NamedTuple):
    """Beyond the text records: the weights or checkpoints (``copy_weights``) of the runs
    whose names match ``weights``, and with ``resumable`` the checkpoints of the runs cut off
    mid-way (``cut_off``)."""

    weights: str | None = None
    resumable: bool = False

    def copy_extra(self, run: Path, kept: Path) -> None:
        named = self.weights is not None and fnmatch.fnmatch(run.name, self.weights)
        if named or (self.resumable and cut_off(run)):
            copy_weights(run, kept)


TEXT_ONLY = Kept()


def cut_off(run: Path) -> bool:
    """Whether ``run`` stopped before its end with nothing to show for it: no summary, and not
    halted at its ``train.halt_at`` (a tuning rung, which its evaluation there stands for, as
    the plans read it: ``halted_on_disk``)."""
    if (run / "summary.json").is_file():
        return False
    try:
        config = stored_config(json.loads((run / "config.json").read_text()))
    except (OSError, ValueError):
        raise UsageError(f"{run / 'config.json'} is not a run's config") from None
    return halted_on_disk(run, config) is None


def save(out: Path, destination: Path, kept: Kept = TEXT_ONLY) -> tuple[int, int]:
    """Copy the records of OUT's runs (those with a config and metrics) into
    DESTINATION/runs/ (made under a temporary name, then renamed), with the weights or
    checkpoints that ``kept`` names; the number of runs copied, and of them the finished
    ones."""
    refuse_links(out / RUNS)  # before anything is made
    runs = sorted(path.parent for path in (out / RUNS).glob("*/metrics.jsonl"))
    runs = [run for run in runs if (run / "config.json").is_file()]

    def copy(staging: Path) -> None:
        for run in runs:
            (staging / run.name).mkdir(parents=True)
            for name in RECORDS:
                if (run / name).is_file():
                    copy_file(run / name, staging / run.name / name)
            kept.copy_extra(run, staging / run.name)

    destination.mkdir(parents=True, exist_ok=True)
    write_folder_atomic(destination / RUNS, copy)
    return len(runs), sum((run / "summary.json").is_file() for run in runs)


def copy_weights(run: Path, kept: Path) -> None:
    """A finished run's weights; an unfinished one's last complete checkpoint, kept as
    ``checkpoint/`` (from ``checkpoint.old`` too, when a kill came mid-swap)."""
    if (run / "summary.json").is_file():
        if (run / WEIGHTS).is_file():
            copy_file(run / WEIGHTS, kept / WEIGHTS)
        return
    checkpoint = latest_checkpoint(run)
    if checkpoint is not None:
        refuse_links(checkpoint)
        shutil.copytree(checkpoint, kept / CHECKPOINT)


def save_suite(out: Path, destination: Path, kept: Kept = TEXT_ONLY) -> tuple[int, int]:
    """``save`` for each task of a suite's OUT into DESTINATION/TASK/, with the task's and the
    suite's files (``TASK_FILES``, ``SUITE_FILES``) where written; DESTINATION is made under a
    temporary name, then renamed. Into a DESTINATION that exists (an output published
    without its runs), only each task's runs/ is added. The runs copied, and of them the
    finished ones."""
    refuse_links(out)
    tasks = sorted(path.parent for path in out.glob(f"*/{RUNS}") if path.is_dir())
    counts: list[tuple[int, int]] = []

    def copy(staging: Path) -> None:
        for task in tasks:
            counts.append(save(task, staging / task.name, kept))
            for name in TASK_FILES:
                if (task / name).is_file():
                    copy_file(task / name, staging / task.name / name)
        for name in SUITE_FILES:
            if (out / name).is_file():
                copy_file(out / name, staging / name)

    if destination.exists():
        # A folder ``publish_results`` made: its tasks' files are there, their runs/ are not.
        for task in tasks:
            counts.append(save(task, destination / task.name, kept))
    else:
        write_folder_atomic(destination, copy)
    return sum(c for c, _ in counts), sum(f for _, f in counts)


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
    copied += _write_missing(out, archived)
    return copied, len(files) + len(archived) - copied


def _write_missing(into: Path, files: list[tuple[str, bytes]]) -> int:
    """Each ``(path, bytes)`` written under ``into`` where it has no such file
    (``write_atomic``); the files written."""
    written = 0
    for name, data in files:
        if not (into / name).exists():
            write_atomic(into / name, lambda tmp, data=data: tmp.write_bytes(data))
            written += 1
    return written


def record_folders(output: Path) -> list[Path]:
    """An output's runs/ folders: its own, and each of its tasks' (a suite's)."""
    return sorted(path for path in (output / RUNS, *output.glob(f"*/{RUNS}")) if path.is_dir())


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
    return _write_missing(into, archived_files(output))


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


def pack(output: Path) -> int:
    """OUTPUT's runs/ folders as one archive, ``OUTPUT/records.tar.gz``, with the files of an
    archive already there that the folders do not hold; the folders go once it is in place
    (written under a temporary name, then renamed). Sorted, with no times or owners, so the
    same files give the same bytes. The files it holds."""
    folders = record_folders(output)
    for folder in folders:
        refuse_links(folder)
    contents = dict(archived_files(output))
    for folder in folders:
        for path in sorted(folder.rglob("*")):
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
    return len(contents)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="run_records", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "out", type=Path, help="the output folder (OUT of the command); DEST with --restore"
    )
    parser.add_argument(
        "destination",
        type=Path,
        nargs="?",
        help="the folder to keep the records in; OUT with --restore; none with --pack",
    )
    parser.add_argument(
        "--suite", action="store_true", help="OUT is a suite's: keep every task's records"
    )
    parser.add_argument(
        "--restore", action="store_true", help="copy kept records (DEST) back into OUT"
    )
    parser.add_argument(
        "--pack", action="store_true", help="OUT's runs/ folders into one archive (no DEST)"
    )
    parser.add_argument(
        "--weights",
        metavar="PATTERN",
        help="keep the weights of the finished runs whose names match PATTERN ('*': all), "
        "and the last checkpoints of the unfinished ones",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="keep the last checkpoint of each run cut off mid-way (not halted at a rung), "
        "for the same command to resume it there",
    )
    args = parser.parse_args(argv)
    if args.pack:
        if args.destination is not None or any(
            (args.restore, args.suite, args.weights, args.resumable)
        ):
            parser.error("--pack takes one folder (OUTPUT) and no other option")
        return main_pack(args.out)
    if args.destination is None:
        parser.error("the folder to keep the records in (DEST) is missing")
    if args.restore:
        return main_restore(args.out, args.destination)
    if args.suite:
        tasks = [path.parent.name for path in args.out.glob(f"*/{RUNS}") if path.is_dir()]
        lacking, keep = f"no task with a {RUNS}/ folder", save_suite
        targets = [args.destination / task / RUNS for task in tasks]
    else:
        lacking, keep = f"no {RUNS}/ folder", save
        targets = [args.destination / RUNS] if (args.out / RUNS).is_dir() else []
    if not targets:
        print(f"run_records: {args.out} has {lacking}", file=sys.stderr)
        return 2
    for target in targets:
        if target.exists():
            print(f"run_records: {target} exists; name a new folder", file=sys.stderr)
            return 2
    count, finished = keep(args.out, args.destination, Kept(args.weights, args.resumable))
    print(f"kept the records of {count} runs ({finished} finished) in {args.destination}")
    return 0


def main_pack(output: Path) -> int:
    if not record_folders(output):
        print(f"run_records: {output} has no {RUNS}/ folder to pack", file=sys.stderr)
        return 2
    count = pack(output)
    print(f"packed {count} files into {output / ARCHIVE}")
    return 0


def main_restore(kept: Path, out: Path) -> int:
    if not record_folders(kept) and not (kept / ARCHIVE).is_file():
        print(f"run_records: {kept} holds no {RUNS}/ folder to restore", file=sys.stderr)
        return 2
    copied, had = restore(kept, out)
    print(f"restored {copied} files from {kept} into {out} ({had} were there already)")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("run_records", main))
