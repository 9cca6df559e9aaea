"""An output folder (``reproduce``, ``suite``, ``compare``, ``compare --axis``) copied into
results/ without its runs (``mixit records publish``).

The runs hold weights, checkpoints and TensorBoard logs (tens of MB per reproduction) and are
not committed; the reports, figures, claims and ``results.csv`` are. The copy is made under a
temporary name and renamed into place, so an interrupted copy leaves nothing behind.
``run_costs`` is what a results README states about the cost, read from the runs' own
summaries: how many runs, their training seconds summed, and when the first summary and the
last were written.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import write_folder_atomic
from mixit.running.records import RUNS

MARKERS = ("results.csv", "claims.json", "timing.json", "axis.json")


class RunCosts(TypedDict):
    """What the runs under an output cost: their count, training seconds summed, and when the
    first and the last summary were written (None where there is none)."""

    runs: int
    train_seconds: float
    first_written: str | None
    last_written: str | None


def run_costs(source: Path) -> RunCosts:
    """The count, training seconds and first/last summary times of the runs under ``source``
    (its own ``runs/``, and each of its folders' for a suite or an axis)."""
    summaries = sorted(
        [*source.glob(f"{RUNS}/*/summary.json"), *source.glob(f"*/{RUNS}/*/summary.json")]
    )
    if not summaries:
        return {"runs": 0, "train_seconds": 0.0, "first_written": None, "last_written": None}
    seconds = sum(json.loads(path.read_text()).get("train_seconds", 0.0) for path in summaries)
    written = sorted(path.stat().st_mtime for path in summaries)

    def stamp(mtime: float) -> str:
        return datetime.fromtimestamp(mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")

    return {
        "runs": len(summaries),
        "train_seconds": round(seconds, 1),
        "first_written": stamp(written[0]),
        "last_written": stamp(written[-1]),
    }


def publish(source: Path, destination: Path, exclude: tuple[str, ...] = ()) -> RunCosts:
    """Copy ``source`` to ``destination`` without its ``runs/`` folder and without the
    top-level names in ``exclude``; return ``run_costs(source)``."""
    if not source.is_dir() or not any((source / marker).exists() for marker in MARKERS):
        markers = ", ".join(MARKERS)
        raise UsageError(f"{source} is not an output folder (it has none of {markers})")
    if destination.exists():
        raise UsageError(f"{destination} exists; remove it or name a new folder")
    for path in source.rglob("*"):
        if path.is_symlink() and RUNS not in path.relative_to(source).parts[:1]:
            raise UsageError(f"{path} is a link; an output is published from plain files only")
    destination.parent.mkdir(parents=True, exist_ok=True)
    skipped = {RUNS, *exclude}

    def top_level_skips(folder: str, names: list[str]) -> set[str]:
        """``exclude`` and ``runs/`` at the top; a suite's task folders' ``runs/`` too."""
        if Path(folder) == source:
            return skipped.intersection(names)
        return {RUNS}.intersection(names) if Path(folder).parent == source else set()

    write_folder_atomic(
        destination, lambda staging: shutil.copytree(source, staging, ignore=top_level_skips)
    )
    return run_costs(source)
