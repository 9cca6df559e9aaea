"""What ``OUT/timing.json`` records of a reproduction: per experiment, its runs' training
seconds and how they ended (``ExperimentSeconds``); per ``reproduce`` call, its wall time and
what it trained (``CallTiming``, kept in ``calls`` so that a later call that trains nothing
keeps the wall time of the one that trained)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from mixit.study.experiment import Run


class ExperimentSeconds(TypedDict):
    """One experiment's distinct runs, their summed training seconds and steps, and how many
    stopped for each reason (``target``, ``plateau``, ``budget``)."""

    runs: int
    train_seconds: float
    steps_run: int
    steps_budget: int
    stopped: dict[str, int]
    # The report's own seconds, where this call wrote it.
    report_seconds: NotRequired[float]


class CallTiming(TypedDict):
    """One ``reproduce`` call on an output."""

    train_wall_seconds: float
    jobs: int
    runs_trained: NotRequired[int]
    experiments: NotRequired[list[str]]
    scale: NotRequired[str]
    seeds: NotRequired[int]
    tuning_wall_seconds: NotRequired[float]


def experiment_seconds(
    planned: Sequence[Run], summaries: Mapping[Run, Mapping[str, Any]]
) -> ExperimentSeconds:
    """The experiment's distinct runs and their summed training seconds as measured when each
    trained, here or earlier (a run two experiments share counts in both)."""
    dirs = {summaries[run]["run_dir"]: summaries[run] for run in planned if run in summaries}
    seconds = sum(summary.get("train_seconds", 0.0) for summary in dirs.values())
    stopped = [summary.get("stopped", "budget") for summary in dirs.values()]
    return {
        "runs": len(dirs),
        "train_seconds": seconds,
        "steps_run": sum(summary.get("steps_run", summary["steps"]) for summary in dirs.values()),
        "steps_budget": sum(summary["steps"] for summary in dirs.values()),
        "stopped": {reason: stopped.count(reason) for reason in sorted(set(stopped))},
    }


def stops_note(seconds: Mapping[str, Any]) -> str:
    """How the runs ended: ``24 runs: target 14, budget 10; 61 % of the steps budget ...``"""
    if not seconds["runs"]:
        return ""
    reasons = ", ".join(f"{reason} {count}" for reason, count in seconds["stopped"].items())
    share = seconds["steps_run"] / max(seconds["steps_budget"], 1)
    return (
        f"{seconds['runs']} runs, stopped by {reasons} (train.stop_at, train.patience, or the "
        f"budget); {share:.0%} of the steps budget trained."
    )


def earlier_timing(out: Path) -> dict[str, Any]:
    """``OUT/timing.json`` as an earlier call wrote it; {} for none or a damaged one."""
    try:
        timing = json.loads((out / "timing.json").read_text())
    except (OSError, ValueError):
        return {}
    return timing if isinstance(timing, dict) else {}


def earlier_calls(timing: Mapping[str, Any]) -> list[CallTiming]:
    """The ``calls`` history of a ``timing.json`` (``earlier_timing``): one entry per
    ``reproduce`` on this output, so that a later call that trains nothing keeps the wall time
    of the one that trained."""
    calls = timing.get("calls", [])
    return calls if isinstance(calls, list) else []
