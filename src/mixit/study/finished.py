"""A suite's finished tasks read back (``mixit suite --report``, ``--beside``): each task's
compare.json checked for what the suite's files read, and judged again under today's reading
rules from its kept runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mixit.common.errors import UsageError
from mixit.common.io import read_record, write_json
from mixit.study.comparison import ComparisonResult
from mixit.study.judge import judged_again
from mixit.study.results import KEYS, csv_problem


def finished_tasks(
    out: Path, tasks: Sequence[str], remedy: str = "run the suite without --report first"
) -> dict[str, ComparisonResult]:
    """``{task: compare.json}`` for each of ``tasks`` whose comparison in ``out`` finished; a
    UsageError ending in ``remedy`` when none did."""
    finished = {
        task: checked_comparison(out / task)
        for task in tasks
        if (out / task / "compare.json").is_file()
    }
    if not finished:
        raise UsageError(
            f"no finished task in {out} (none of {', '.join(tasks)} has a compare.json): {remedy}"
        )
    return finished


def judged_now(
    out: Path, results: Mapping[str, ComparisonResult], into: Path
) -> dict[str, ComparisonResult]:
    """Each finished task's compare.json judged again under today's reading rules from the run
    records its results.csv names (nothing retrained), written where the reading moved to the
    same place under ``into`` (``common.io.staged``, so that a later refusal leaves every file
    as it was)."""
    again = {task: judged_again(result, out / task) for task, result in results.items()}
    for task, result in again.items():
        if result != results[task]:
            write_json(into / task / "compare.json", result)
    return again


def checked_comparison(folder: Path) -> ComparisonResult:
    """A finished task's compare.json, and its results.csv, checked for what the suite's files
    read, so that one from another version is refused (UsageError) before anything is written."""
    path = folder / "compare.json"
    result = read_record(path, ComparisonResult, str(path), "run the suite again without --report")
    problem = csv_problem(folder / "results.csv", (*KEYS, "metric", "value"))
    if problem:
        raise UsageError(f"{problem}; run the suite again without --report")
    return result
