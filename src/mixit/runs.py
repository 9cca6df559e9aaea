"""Runs: a plan is a mapping from keys to resolved configs; this module trains the missing
ones into one folder, collects the summaries, and times what is left to train.

Every command keeps its runs in a folder (``OUT/runs``) under a name that hashes the resolved
config (``run_dir_name``), so a run that `compare`, `reproduce`, the ablation or a sweep
planned once is trained once and found again by all of them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing
import os
import sys
from collections.abc import Hashable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, TypeVar

import torch

from mixit.checkpoint import finished_summary
from mixit.config import RunConfig
from mixit.devices import sharing_note, worker_gpus
from mixit.distributed import Ranks
from mixit.errors import RunsFailed
from mixit.launchers import JobArray, Launch
from mixit.processes import exit_with_parent, start_worker
from mixit.train import run as train_run

Key = TypeVar("Key", bound=Hashable)


def run_dir_name(config: RunConfig) -> str:
    """``TASK-MODEL-sSEED-HASH``: the hash covers the whole resolved config, so a changed
    setting gives a new directory and an unchanged one finds its finished run."""
    text = json.dumps(config.result_dict(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{config.task_name}-{config.variant}-s{config.seed}-{digest[:10]}"


# The GPUs this worker process trains on (``worker_gpus``); none: each run's own device.
_PINNED: tuple[int, ...] = ()


def _start_pinned_worker(parent_pid: int, devices: Any) -> None:
    """A pool worker's start: it ends with its parent and takes the next GPUs of the pool's
    queue for every run it trains."""
    global _PINNED
    start_worker(parent_pid)
    _PINNED = devices.get()


def pinned_device() -> str | None:
    """The device of this worker's one-process runs."""
    return f"cuda:{_PINNED[0]}" if _PINNED else None


def _train_in_worker(
    config_dict: dict[str, Any], run_dir: str, threads: int | None, ranks: int = 1
) -> dict[str, Any]:
    """Train one run from this process (a pool worker, or a submitted job: ``threads`` None
    keeps the threads the job was given); with ``ranks`` > 1 through torchrun, one process
    per rank on this worker's GPUs (on the CPU without GPUs)."""
    import torch

    from mixit.config import from_dict
    from mixit.tasks import get_task
    from mixit.train import run

    if ranks > 1:
        return _train_with_torchrun(config_dict, Path(run_dir), ranks, threads)
    if threads is not None:
        torch.set_num_threads(threads)
    config = from_dict(config_dict, get_task(config_dict["task_name"]).config_cls)
    device = pinned_device()
    if device is not None and config.train.device == "auto":
        config.train.device = device  # an execution setting: the run's identity is unchanged
    return run(config, Path(run_dir), progress=False)


def _train_with_torchrun(
    config_dict: dict[str, Any], run_dir: Path, ranks: int, threads: int | None
) -> dict[str, Any]:
    """``torchrun --standalone --nproc_per_node=RANKS -m mixit.rank`` on this worker's GPUs;
    its output goes to ``RUN_DIR/torchrun.log``, named in the error if the run fails."""
    import subprocess
    import tempfile

    env = {**os.environ, "OMP_NUM_THREADS": str(threads or 1)}
    if _PINNED:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, _PINNED))
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "torchrun.log"
    with tempfile.TemporaryDirectory() as scratch:
        config_file = Path(scratch) / "config.json"
        config_file.write_text(json.dumps(config_dict))
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        command += [f"--nproc_per_node={ranks}", "-m", "mixit.rank", str(config_file), str(run_dir)]
        ends_with_worker = functools.partial(exit_with_parent, os.getpid())
        with log.open("w") as output:
            done = subprocess.run(
                command,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                preexec_fn=ends_with_worker,  # a stopped pool ends its torchrun groups too
            )
    if done.returncode:
        raise RuntimeError(f"run {run_dir.name} failed under torchrun; its log: {log}")
    return json.loads((run_dir / "summary.json").read_text())


def worker_pool(jobs: int, per_run: int = 1) -> ProcessPoolExecutor:
    """``jobs`` spawned worker processes (no forked OpenMP state) that end with this one,
    worker i on GPUs i K .. i K + K - 1 mod G for ``per_run`` = K where G GPUs are visible
    (``mixit.devices``)."""
    context = multiprocessing.get_context("spawn")
    devices = context.Queue()
    for gpus in worker_gpus(jobs, per_run):
        devices.put(gpus)
    note = sharing_note(jobs, per_run)
    if note:
        print(f"mixit: {note}", file=sys.stderr)
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_start_pinned_worker,
        initargs=(os.getpid(), devices),
    )


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Drop the queued runs and end the running ones; their run directories stay unfinished,
    so the next ``reproduce`` trains them again. The executor names no workers publicly, so
    this ends every child process of this one, which while training are the pool's only."""
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in multiprocessing.active_children():
        worker.terminate()


def worker_threads(jobs: int) -> int:
    """Threads per training process: the machine's cores shared between ``jobs`` processes."""
    return torch.get_num_threads() if jobs == 1 else max(1, (os.cpu_count() or 1) // jobs)


def train_missing(
    configs: Mapping[Key, RunConfig],
    runs_dir: Path,
    jobs: int = 1,
    progress: bool | None = False,
    train: bool = True,
    each: bool = False,
    launch: Launch | None = None,
) -> tuple[dict[Key, dict[str, Any]], int]:
    """Summaries of every run (with its ``run_dir``), training those not finished yet (with
    ``train=False``, of the finished runs only), and how many distinct runs it trained (or
    submitted). Keys whose configs are equal share one run. ``each`` also shows each run's
    own progress bar (one job only). ``launch`` submits the missing runs as a job array
    (``mixit.launchers``); without waiting, the summaries are those of the finished runs."""
    summaries: dict[Key, dict[str, Any]] = {}
    todo: dict[str, tuple[RunConfig, list[Key]]] = {}
    for run, config in configs.items():
        name = run_dir_name(config)
        summary = finished_summary(runs_dir / name, config)
        if summary is not None:
            summaries[run] = {**summary, "run_dir": str(runs_dir / name)}
        else:
            todo.setdefault(name, (config, []))[1].append(run)
    if not todo or not train:
        return summaries, 0
    launch = launch or Launch()
    if launch.submits:
        _submit_missing(todo, runs_dir, launch, jobs)
        collected, _ = train_missing(configs, runs_dir, train=False)
        return collected, len(todo)
    _train_locally(todo, summaries, runs_dir, (jobs, launch.gpus_per_run), progress, each)
    return summaries, len(todo)


def _train_locally(
    todo: Mapping[str, tuple[RunConfig, list[Key]]],
    summaries: dict[Key, dict[str, Any]],
    runs_dir: Path,
    workers: tuple[int, int],
    progress: bool | None,
    each: bool,
) -> None:
    """Train the ``todo`` runs here (one at a time, or in a pool of ``jobs`` workers, each
    run with ``ranks`` processes: ``workers`` is both), adding each one's summary under all
    its keys."""
    jobs, ranks = workers
    from tqdm import tqdm

    bar = tqdm(total=len(todo), desc="training runs", unit="run", disable=not progress)

    def finished(name: str, summary: dict[str, Any]) -> None:
        for run in todo[name][1]:
            summaries[run] = {**summary, "run_dir": str(runs_dir / name)}
        bar.update()

    if jobs == ranks == 1:
        for name, (config, _) in todo.items():
            finished(name, train_run(config, runs_dir / name, progress=each and progress))
    else:
        for config, _ in todo.values():
            Ranks(world=ranks).check_batch(config.train.batch_size)
        threads = worker_threads(jobs * ranks)
        pool = worker_pool(jobs, ranks)
        try:
            futures = {
                pool.submit(
                    _train_in_worker, config.to_dict(), str(runs_dir / name), threads, ranks
                ): name
                for name, (config, _) in todo.items()
            }
            for future in as_completed(futures):
                finished(futures[future], future.result())
        except BaseException:  # Ctrl-C or a failed run: stop now, not after the queued runs
            stop_workers(pool)
            raise
        finally:
            pool.shutdown()
    bar.close()


def _submit_missing(
    todo: Mapping[str, tuple[RunConfig, list[Key]]], runs_dir: Path, launch: Launch, jobs: int
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
    threads = worker_threads(max(jobs, len(todo))) if launch.launcher == "submitit-local" else None
    submitted = array.submit(
        _train_in_worker,
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
    unfinished = [name for name in todo if finished_summary(runs_dir / name, todo[name][0]) is None]
    if unfinished:
        raise RunsFailed("\n".join(array.failure_lines(unfinished)))


def unfinished(configs: Mapping[Key, RunConfig], runs_dir: Path | None) -> dict[str, RunConfig]:
    """The distinct configs not finished in ``runs_dir`` (all of them when None), by run
    directory name."""
    named = {run_dir_name(config): config for config in configs.values()}
    if runs_dir is None:
        return named
    return {name: c for name, c in named.items() if finished_summary(runs_dir / name, c) is None}


def pending_timings(
    configs: Mapping[Key, RunConfig], runs_dir: Path | None, jobs: int = 1, progress: bool = False
) -> dict[str, dict[str, float]]:
    """``time_training``'s figures for each run not finished in ``runs_dir`` (all of them when
    None), by run directory name, timed at the threads a worker of ``jobs`` gets. Seeds share
    a config's timing: their steps cost the same."""
    from tqdm import tqdm

    from mixit.train import time_training

    pending = unfinished(configs, runs_dir)
    by_shape: dict[str, dict[str, float]] = {}
    timings = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(worker_threads(jobs))
    try:
        for name, config in tqdm(pending.items(), desc="timing runs", disable=not progress):
            shape = json.dumps({**config.result_dict(), "seed": 0}, sort_keys=True)
            if shape not in by_shape:
                by_shape[shape] = time_training(config)
            timings[name] = by_shape[shape]
    finally:
        torch.set_num_threads(threads)
    return timings


def predicted_timings(
    configs: Mapping[Key, RunConfig], runs_dir: Path | None, target: str
) -> dict[str, dict[str, Any]]:
    """``mixit.cost.predict``'s seconds and memory on ``target`` for each run not finished in
    ``runs_dir`` (all of them when None), by run directory name: nothing is timed here."""
    from mixit.cost import get_target, predict, shapes

    device = get_target(target)
    pending = unfinished(configs, runs_dir)
    return {
        name: predict(filled, shape, device) for name, (filled, shape) in shapes(pending).items()
    }
