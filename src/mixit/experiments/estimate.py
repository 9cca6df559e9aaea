"""What a reproduction would cost before it runs (``reproduce --estimate``): each pending run
timed for a few steps here, or predicted for a target device (``--target``, ``mixit.cost``),
and the wall time of the whole plan on ``--jobs`` workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.estimate import duration
from mixit.experiments.base import Reproduction
from mixit.experiments.runner import plan_reproduction
from mixit.resolve import resolve_device
from mixit.runs import list_schedule, pending_timings, predicted_timings, run_dir_name
from mixit.workers import worker_threads


def estimate_reproduction(
    names: Sequence[str], how: Reproduction, target: str | None = None
) -> dict[str, Any]:
    """What ``reproduce`` with these arguments would train, and for how long, without
    training: each distinct config (seeds share one) is timed for a few steps on this machine
    at the thread count a worker would get (``mixit.runs.pending_timings``), or, with
    ``target`` (``mixit.cost.TARGETS``), predicted for that device from its FLOPs, with its
    memory. Runs already finished in ``out`` cost nothing. The wall-time estimate assumes the
    ``jobs`` processes (one per GPU on a target) do not slow each other down; it covers
    training, not the reports.
    """
    scale, seed_range, jobs = how.scale, how.seed_range, how.jobs
    experiments, configs = plan_reproduction(names, how)
    dir_names = {run: run_dir_name(config) for run, config in configs.items()}
    if target is None:
        timings = pending_timings(configs, Path(how.out) / "runs", jobs, how.progress)
    else:
        timings = predicted_timings(configs, Path(how.out) / "runs", target)
    seconds = {name: timing["run_seconds"] for name, timing in timings.items()}
    per_experiment = {}
    for experiment in experiments:
        planned = {dir_names[run] for run in experiment.plan(scale, seed_range)}
        todo = planned & seconds.keys()
        per_experiment[experiment.name] = {
            "runs": len(planned),
            "runs_to_train": len(todo),
            "train_seconds": sum(seconds[name] for name in todo),
        }
    result = {
        "scale": scale,
        "seeds": how.seeds,
        "jobs": jobs,
        "threads_per_job": worker_threads(jobs),
        "device": str(resolve_device("auto")),
        "experiments": per_experiment,
        "runs_to_train": len(seconds),
        "configs_timed": len({id(timing) for timing in timings.values()}),
        "train_seconds": sum(seconds.values()),
        "wall_seconds": list_schedule(list(seconds.values()), jobs),
    }
    if target is not None:
        result |= memory_summary(timings, target)
    return result


def memory_summary(timings: Mapping[str, Mapping[str, Any]], target: str) -> dict[str, Any]:
    """The target device and the largest run's memory, and the runs that do not fit."""
    from mixit.cost import GIB, fewest_pieces, get_target

    device = get_target(target)
    largest = max((t["memory_bytes"] for t in timings.values()), default=0)
    return {
        "device": f"predicted from FLOPs for {device.describe()}",
        "target": device.name,
        "memory_gib_largest_run": largest / GIB,
        "memory_gib_device": device.memory_gib,
        "runs_not_fitting": sorted(name for name, t in timings.items() if not t["fits"]),
        "micro_batches_to_fit": fewest_pieces(t["micro_batches_to_fit"] for t in timings.values()),
    }


def format_reproduction_estimate(estimate: Mapping[str, Any]) -> str:
    """``estimate``'s result as a markdown table and a closing line."""
    rows = [
        f"| {name} | {e['runs']} | {e['runs_to_train']} | {e['train_seconds']:,.0f} |"
        for name, e in estimate["experiments"].items()
    ]
    return "\n".join(
        [
            f"Estimated training at `{estimate['scale']}` scale, {estimate['seeds']} seed(s), "
            f"on {estimate['device']}"
            + (
                ""
                if "target" in estimate
                else f" ({estimate['threads_per_job']} thread(s) per job)"
            )
            + ":",
            "",
            "| experiment | runs | to train | seconds (one job) |",
            "|---|---:|---:|---:|",
            *rows,
            "",
            f"{estimate['runs_to_train']} runs to train ({estimate['configs_timed']} configs "
            f"{'predicted' if 'target' in estimate else 'timed'}): "
            f"{estimate['train_seconds']:,.0f} s in one job, about "
            f"{duration(estimate['wall_seconds'])} of wall time with --jobs {estimate['jobs']} "
            "(runs shared by experiments count in each row, once in the total).",
            *memory_lines(estimate),
        ]
    )


def memory_lines(estimate: Mapping[str, Any]) -> list[str]:
    if "memory_gib_largest_run" not in estimate:
        return []
    misfits = estimate["runs_not_fitting"]
    return [
        f"The largest run needs about {estimate['memory_gib_largest_run']:,.1f} GiB; one "
        f"{estimate['target']} has {estimate['memory_gib_device']:,.0f} GiB"
        + (f"; {len(misfits)} runs do not fit: {', '.join(misfits[:3])}" if misfits else ".")
        + micro_batch_hint(estimate)
    ]


def micro_batch_hint(estimate: Mapping[str, Any]) -> str:
    """How to make the runs that do not fit fit, where splitting their batches can."""
    pieces = estimate.get("micro_batches_to_fit")
    if not estimate["runs_not_fitting"]:
        return ""
    if pieces is None:
        return " (not even one row at a time)"
    return f" (train.micro_batches={pieces} fits them: the same steps, a batch in {pieces} pieces)"
