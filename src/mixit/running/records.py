"""A run's records kept as text, so a later checkout goes on from them (``mixit records``).

A run directory holds weights and checkpoints (tens to hundreds of MB), which are not
committed, and three small text files: ``config.json``, ``metrics.jsonl`` and, once it is
finished, ``summary.json``. ``reproduce``, ``compare`` and the tuning protocol reuse a
finished run from those files alone (its summary and its metrics), except where a report
reads the trained weights; and a tuning trial halted at a rung from its evaluation there.
``save`` copies the text files of every run of an output into DEST/runs/ (``save_suite`` for
each task or axis value of a suite), with the weights or checkpoints a ``Kept`` names; what has
to train on starts again from step 0 unless its checkpoint was kept. ``mixit.running.archive``
packs the kept folders into one file and restores them.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path
from typing import NamedTuple

from mixit.common.errors import UsageError
from mixit.common.io import write_folder_atomic
from mixit.training.checkpoint import CHECKPOINT, latest_checkpoint
from mixit.training.resolve import stored_config
from mixit.training.rundir import RunDir

RUNS = "runs"
RECORDS = ("config.json", "metrics.jsonl", "summary.json")
WEIGHTS = "model.safetensors"
# The hand-written account of the kept records, which is not part of any output.
KEPT_NOTES = "README.md"
# What a suite writes beside its tasks' runs, per task and for the whole suite.
TASK_FILES = ("compare.json", "results.csv", "tuning.json")
SUITE_FILES = ("results.csv", "heatmap.png", "summary.md", "suite.json")


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
    the plans read it: ``RunDir.cut_off``)."""
    if (run / "summary.json").is_file():
        return False
    try:
        config = stored_config(json.loads((run / "config.json").read_text()))
    except (OSError, ValueError):
        raise UsageError(f"{run / 'config.json'} is not a run's config") from None
    return RunDir(run, config).cut_off()


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
        # A folder ``mixit records publish`` made: its tasks' files are there, their runs/ are not.
        for task in tasks:
            counts.append(save(task, destination / task.name, kept))
    else:
        write_folder_atomic(destination, copy)
    return sum(c for c, _ in counts), sum(f for _, f in counts)


def record_folders(output: Path) -> list[Path]:
    """An output's runs/ folders: its own, and each of its tasks' (a suite's)."""
    return sorted(path for path in (output / RUNS, *output.glob(f"*/{RUNS}")) if path.is_dir())
