"""What a plan's runs cost, before any of them trains: the one estimator every command prices
its plan with (``plan_timings``), the wall time of its runs on the workers, and the fewest
steps a run may take. `compare`, `suite`, `train` and `reproduce` all price through it
(``mixit.study.estimate``, ``mixit.paper.estimate``)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.config.schema import RunConfig, TrainConfig
from mixit.cost.predict import Timing, get_target, predicted_timings
from mixit.running.runs import pending_timings, run_dir_name, unfinished
from mixit.running.workers import parallel_jobs, worker_threads
from mixit.training.devices import present_device
from mixit.training.stopping import PLATEAU_EVALUATIONS


def earliest_stop(train: TrainConfig) -> int:
    """The fewest steps a run of ``train`` can take: its first evaluation when it stops at a
    target (``stop_at``); on no progress, ``patience`` evaluations after its first, or the
    first evaluation a ``plateau`` stretch (and three evaluations) after its first; all of
    ``steps`` without a stop rule."""
    every, firsts = train.eval_every, [train.steps]
    if train.stop_at is not None:
        firsts.append(every)
    if train.patience > 0:
        firsts.append((train.patience + 1) * every)
    if train.plateau > 0:
        span = every * max(PLATEAU_EVALUATIONS - 1, math.ceil(train.plateau * train.steps / every))
        firsts.append(every + span)
    return min(firsts)


# The committed tiny reproductions' runs at --jobs 2 took this many times the seconds a step
# that ``time_training`` measures on the quiet machine (fit on tiny-rules-seed300, held out on
# tiny-rules-seed0: results/estimate-calibration/tiny.json, docs/cost.md "Estimates against
# the committed records"), so a step of runs that share the CPU's cores is priced at it.
SHARED_STEP_FACTOR = 1.40


def shares_cores(config: RunConfig, jobs: int) -> bool:
    """Whether runs of ``config`` trained by ``jobs`` workers share this machine's CPU cores."""
    return parallel_jobs(jobs) >= 2 and present_device(config.train.device).type == "cpu"


def plan_timings(
    configs: Mapping[Any, RunConfig],
    runs_dir: Path | None,
    target: str | None,
    jobs: int,
    progress: bool | None = None,
) -> dict[str, Timing]:
    """The one estimator every command prices its plan with: each pending run (by run
    directory name) timed for a few steps here at the threads one of ``jobs`` workers gets
    (``pending_timings``; a step of runs that share the cores priced at
    ``SHARED_STEP_FACTOR``), or, with ``target``, predicted for that device with its memory
    (``predicted_timings``); a run finished in ``runs_dir`` costs nothing."""
    if target is not None:
        return predicted_timings(unfinished(configs, runs_dir), target)
    timings = pending_timings(configs, runs_dir, jobs, progress)
    # Seeds share their config's timing (one object, which an estimate counts once); so do
    # their priced copies. Each copy is kept beside the timing it was made from.
    priced: dict[int, tuple[Timing, Timing]] = {}
    for config in configs.values():
        name = run_dir_name(config)
        if name in timings and shares_cores(config, jobs):
            timing = timings[name]
            if id(timing) not in priced:
                added = (SHARED_STEP_FACTOR - 1) * timing["step_seconds"] * config.train.steps
                step = timing["step_seconds"] * SHARED_STEP_FACTOR
                copy: Timing = {**timing, "step_seconds": step}
                copy["run_seconds"] = timing["run_seconds"] + added
                priced[id(timing)] = (timing, copy)
            timings[name] = priced[id(timing)][1]
    return timings


def list_schedule(seconds: Sequence[float], jobs: int) -> float:
    """Wall time of tasks handed, in order, to whichever of ``jobs`` workers is free first."""
    free_at = [0.0] * jobs
    for task_seconds in seconds:
        heapq.heapreplace(free_at, free_at[0] + task_seconds)
    return max(free_at)


def wall_seconds(run_seconds: Sequence[float], jobs: int, target: str | None) -> float:
    """The plan's wall time on ``jobs`` workers: here as many as the cores run side by side
    (``parallel_jobs``), on a target one per device."""
    return list_schedule(list(run_seconds), jobs if target else parallel_jobs(jobs))


def priced_where(config: RunConfig, jobs: int, target: str | None) -> str:
    """How a plan of ``config``'s runs on ``jobs`` workers was priced: timed here (at what
    threads, and at what pace for runs that share the cores) or predicted for ``target``."""
    if target is not None:
        return f"predicted for {get_target(target).describe()}"
    device = present_device(config.train.device)
    where = f"timed on this machine ({device.type}, {worker_threads(jobs)} threads a run"
    if shares_cores(config, jobs):
        where += f"; a step x{SHARED_STEP_FACTOR:.2f} for runs sharing the cores, docs/cost.md"
    return where + ")"
