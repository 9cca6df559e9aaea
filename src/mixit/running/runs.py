"""Runs: a plan is a mapping from keys to resolved configs; this module trains the missing
ones into one folder, collects the summaries, and times what is left to train.

Every command keeps its runs in a folder (``OUT/runs``) under a name that hashes the resolved
config (``run_dir_name``), so a run that `compare`, `reproduce`, the ablation or a sweep
planned once is trained once and found again by all of them. A run halted at its
``train.halt_at`` is found again from its evaluation there; one with a checkpoint and no
summary (interrupted, or halted and now asked to go further) resumes from its checkpoint.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import as_completed
from pathlib import Path
from typing import TypeVar

import torch

from mixit.common.digest import files_digest
from mixit.common.errors import RunsFailed, TrainingDiverged, UsageError
from mixit.common.progress import Progress, WorkBar, progress_bar, progress_mode
from mixit.config.schema import RunConfig
from mixit.cost.predict import Timing, predicted_timings
from mixit.models.build import arch_files
from mixit.running.launchers import LOCAL, JobArray, Launch
from mixit.running.workers import (
    kept_pool,
    stop_workers,
    train_group_in_worker,
    train_in_worker,
    worker_threads,
)
from mixit.training.distributed import Ranks
from mixit.training.members import member_key, train_group
from mixit.training.resolve import check_runnable_here
from mixit.training.rundir import RunDir, RunSummary
from mixit.training.timing import time_training
from mixit.training.train import run as train_run

Key = TypeVar("Key", bound=Hashable)

# A planned run that sets no ``train.checkpoint_every`` checkpoints this many times over its
# budget, so a plan stopped mid-way (a session's end, a killed job) resumes each run in flight
# from at most an eighth of its budget back; runs shorter than the floor write none mid-way.
CHECKPOINTS_PER_RUN, CHECKPOINT_FLOOR = 8, 500


def run_dir_name(config: RunConfig) -> str:
    """``TASK-MODEL-sSEED-HASH``: the hash covers the whole resolved config, so a changed
    setting gives a new directory and an unchanged one finds its finished run; and, where the
    run reads a user's files (data, a generator, a model factory), their contents, so an
    edited file trains anew. A run that reads none is named by its config alone."""
    read_files = config.task_spec.read_files
    files = (*(read_files(config.task) if read_files else ()), *arch_files(config.model.arch))
    return hashed_name(config, files_digest(files))


def hashed_name(config: RunConfig, files_text: str = "") -> str:
    """``TASK-MODEL-sSEED-HASH`` with the hash over ``config`` and then ``files_text`` (the
    digest of the files the run reads); without it, the config-only name that runs of a
    custom task had before names covered their files (``mixit records rename`` reads it)."""
    text = json.dumps(config.result_dict(), sort_keys=True) + files_text
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{config.task_name}-{config.variant}-s{config.seed}-{digest[:10]}"


def train_missing(
    configs: Mapping[Key, RunConfig],
    runs_dir: Path,
    progress: bool | None = False,
    train: bool = True,
    each: bool = False,
    launch: Launch = LOCAL,
    diverged: list[Key] | None = None,
) -> tuple[dict[Key, RunSummary], int]:
    """Summaries of every run (with its ``run_dir``), training those not finished yet (with
    ``train=False``, of the finished runs only; a run halted at its ``train.halt_at`` counts as
    finished there), and how many distinct runs it trained (or submitted). Keys whose configs
    are equal share one run. ``each`` also shows each run's own progress bar (one job only).
    ``launch`` says where the missing runs train: here, in a pool of ``launch.jobs`` workers,
    or submitted as a job array (``mixit.running.launchers``; without waiting, the summaries are
    those of the finished runs). A run that diverges stops the whole plan, unless a ``diverged``
    list is given: its keys then go there (runs trained here; a submitted one that diverged
    ends without a summary, which stops the plan)."""
    summaries: dict[Key, RunSummary] = {}
    todo: dict[str, tuple[RunConfig, list[Key]]] = {}
    for run, config in configs.items():
        name = run_dir_name(config)
        run_dir = runs_dir / name
        # A run halted at its train.halt_at (the tuning's rungs) is as good as finished there.
        summary = RunDir(run_dir, config).ended()
        if summary is not None:
            summaries[run] = {**summary, "run_dir": str(run_dir)}
        else:
            todo.setdefault(name, (with_checkpoints(config), []))[1].append(run)
    if not todo or not train:
        return summaries, 0
    if launch.submits:
        _submit_missing(todo, runs_dir, launch)
        collected, _ = train_missing(configs, runs_dir, train=False)
        return collected, len(todo)
    # Fewer runs than jobs (a halving's last rung) share the cores among those runs alone.
    units = member_groups(todo) if launch.members and launch.gpus_per_run == 1 else None
    units = units or [[name] for name in todo]
    workers = (min(launch.jobs, len(units)), launch.gpus_per_run)
    _train_locally(todo, units, summaries, runs_dir, workers, (progress, each), diverged)
    return summaries, len(todo)


def with_checkpoints(config: RunConfig) -> RunConfig:
    """``config``, or where it sets no ``train.checkpoint_every`` a copy that checkpoints
    ``CHECKPOINTS_PER_RUN`` times (an execution setting: the run and its numbers are the same,
    since a checkpoint resumes exactly)."""
    if config.train.checkpoint_every:
        return config
    every = max(CHECKPOINT_FLOOR, -(-config.train.steps // CHECKPOINTS_PER_RUN))
    train = dataclasses.replace(config.train, checkpoint_every=every)
    return dataclasses.replace(config, train=train)


def member_groups(todo: Mapping[str, tuple[RunConfig, list[Key]]]) -> list[list[str]]:
    """The ``todo`` runs' names in the units they train in: those of one ``member_key`` as a
    group of members, each other run alone."""
    groups: dict[str, list[str]] = {}
    units = []
    for name, (config, _) in todo.items():
        key = member_key(config)
        if key is None:
            units.append([name])
        else:
            groups.setdefault(key, []).append(name)
    return [*groups.values(), *units]


def _train_locally(
    todo: Mapping[str, tuple[RunConfig, list[Key]]],
    units: Sequence[Sequence[str]],
    summaries: dict[Key, RunSummary],
    runs_dir: Path,
    workers: tuple[int, int],
    shown: tuple[bool | None, bool],
    diverged: list[Key] | None,
) -> None:
    """Train the ``todo`` runs here in their ``units`` (a run alone, or members trained
    together: ``member_groups``), one unit at a time or in a pool of ``jobs`` workers, each
    run with ``ranks`` processes (``workers`` is both), adding each one's summary under all
    its keys; ``shown``: the progress bar over the runs, and each run's own. A run that
    diverges raises, or with a ``diverged`` list, adds its keys there."""
    (jobs, ranks), (progress, each) = workers, shown
    for config, _ in todo.values():
        check_runnable_here(config)

    mode = progress_mode(progress)
    bar = WorkBar(run_costs(todo), mode=mode, desc="training runs", unit="run")
    # Bars of runs side by side would overwrite each other; a log's lines do not, and there
    # they are what shows that a long run goes on.
    each_run = "lines" if mode == "lines" else ("bars" if each and mode == "bars" else "off")

    def finished(name: str, summary: Callable[[], RunSummary]) -> None:
        try:
            trained = summary()
        except TrainingDiverged:
            if diverged is None:
                raise
            diverged.extend(todo[name][1])
        else:
            for run in todo[name][1]:
                summaries[run] = {**trained, "run_dir": str(runs_dir / name)}
        bar.finished(name)

    if jobs == ranks == 1:
        for unit in units:
            if len(unit) > 1:
                configs = [todo[name][0] for name in unit]
                trained = train_group(configs, [runs_dir / name for name in unit])
                for name, result in zip(unit, trained, strict=True):
                    finished(name, functools.partial(_returned, result))
                continue
            config = todo[unit[0]][0]
            run_dir = runs_dir / unit[0]
            finished(unit[0], functools.partial(train_run, config, run_dir, each_run, resume=True))
    else:
        lines = "lines" if each_run == "lines" else "off"
        _train_in_pool(todo, units, runs_dir, workers, lines, finished)
    bar.close()


def run_costs(todo: Mapping[str, tuple[RunConfig, list[Key]]]) -> dict[str, float]:
    """Each run's predicted seconds on this kind of device (``cost.predict``, as ``--estimate``
    prices it), for the progress over runs; by its steps alone where the cost model cannot
    price it (a task whose data it cannot size)."""
    configs = {name: config for name, (config, _) in todo.items()}
    target = "h100" if torch.cuda.is_available() else "cpu"
    try:
        predicted = predicted_timings(configs, target)
        return {name: predicted[name]["run_seconds"] for name in configs}
    except (UsageError, KeyError):
        return {name: float(config.train.steps) for name, config in configs.items()}


def _returned(result: RunSummary | str) -> RunSummary:
    """A member's summary, or its divergence (``train_group``'s message) raised again."""
    if isinstance(result, str):
        raise TrainingDiverged(result)
    return result


def _train_in_pool(
    todo: Mapping[str, tuple[RunConfig, list[Key]]],
    units: Sequence[Sequence[str]],
    runs_dir: Path,
    workers: tuple[int, int],
    progress: Progress,
    finished: Callable[[str, Callable[[], RunSummary]], None],
) -> None:
    """Train the ``todo`` runs' ``units`` in a pool of ``jobs`` workers of ``ranks`` processes
    each (``workers``), calling ``finished`` with each run's name and result as it ends."""
    jobs, ranks = workers
    for config, _ in todo.values():
        Ranks(world=ranks).check_batch(config.train.batch_size)
    threads = worker_threads(jobs * ranks)
    pool = kept_pool(jobs, ranks)
    try:
        futures = {}
        for unit in units:
            stored = [todo[name][0].to_dict() for name in unit]
            dirs = [str(runs_dir / name) for name in unit]
            if len(unit) > 1:
                futures[pool.submit(train_group_in_worker, stored, dirs, threads)] = unit
            else:
                job = train_in_worker, stored[0], dirs[0], threads, ranks, progress
                futures[pool.submit(*job)] = unit
        for future in as_completed(futures):
            unit = futures[future]
            if len(unit) == 1:
                finished(unit[0], future.result)
                continue
            for name, result in zip(unit, future.result(), strict=True):
                finished(name, functools.partial(_returned, result))
    except BaseException:  # Ctrl-C or a failed run: stop now, not after the queued runs
        stop_workers(pool)
        raise


def _submit_missing(
    todo: Mapping[str, tuple[RunConfig, list[Key]]], runs_dir: Path, launch: Launch
) -> None:
    """Submit the ``todo`` runs not already in flight as one job array (a run whose earlier
    job failed is said, with its log, and submitted again); wait for them all when
    ``launch.wait``, then fail with every run that ended without a summary."""
    array = JobArray(runs_dir.parent / "slurm", launch.launcher, launch.options)
    flying, failed, fresh = array.split(list(todo))
    for line in array.failure_lines(failed):
        print(f"mixit: {line}; submitting it again", file=sys.stderr)
    # Local "jobs" share this machine's cores, as a pool's workers do; a cluster's jobs keep
    # the cores their allocation gives them.
    threads = (
        worker_threads(max(launch.jobs, len(todo))) if launch.launcher == "submitit-local" else None
    )
    submitted = array.submit(
        train_in_worker,
        {
            name: (todo[name][0].to_dict(), str(runs_dir / name), threads)
            for name in [*failed, *fresh]
        },
    )
    print(
        f"mixit: {len(submitted)} runs submitted ({launch.launcher}), {len(flying)} already in "
        f"flight; logs in {array.folder}",
        file=sys.stderr,
    )
    if not launch.wait:
        return
    array.wait([*flying, *submitted], submitted)
    unfinished = [
        name
        for name, (config, _) in todo.items()
        if RunDir(runs_dir / name, config).ended() is None
    ]
    if unfinished:
        raise RunsFailed("\n".join(array.failure_lines(unfinished)))


def unfinished(configs: Mapping[Key, RunConfig], runs_dir: Path | None) -> dict[str, RunConfig]:
    """The distinct configs not finished in ``runs_dir`` (all of them when None), by run
    directory name."""
    named = {run_dir_name(config): config for config in configs.values()}
    if runs_dir is None:
        return named
    return {name: c for name, c in named.items() if RunDir(runs_dir / name, c).finished() is None}


def pending_timings(
    configs: Mapping[Key, RunConfig], runs_dir: Path | None, jobs: int = 1, progress: bool = False
) -> dict[str, Timing]:
    """``time_training``'s figures for each run not finished in ``runs_dir`` (all of them when
    None), by run directory name, timed at the threads a worker of ``jobs`` gets. Seeds share
    a config's timing: their steps cost the same."""
    pending = unfinished(configs, runs_dir)
    by_shape: dict[str, Timing] = {}
    timings = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(worker_threads(jobs))
    try:
        timing = progress_bar(pending.items(), mode=progress_mode(progress), desc="timing runs")
        for name, config in timing:
            shape = json.dumps({**config.result_dict(), "seed": 0}, sort_keys=True)
            if shape not in by_shape:
                by_shape[shape] = time_training(config)
            timings[name] = by_shape[shape]
    finally:
        torch.set_num_threads(threads)
    return timings
