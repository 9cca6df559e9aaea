"""The processes that train runs for ``mixit.running.runs``: a pool of spawned workers that end with
the command, each pinned to its own GPUs (``mixit.training.devices``), training a run in-process or,
with several GPUs per run, as a torchrun group (``mixit.running.rank``)."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import torch

from mixit.common.cores import SHARED_FROM, usable_cores
from mixit.common.io import JSONObject
from mixit.common.progress import Progress
from mixit.config.overrides import with_settings
from mixit.config.schema import RunConfig
from mixit.training import devices
from mixit.training.members import train_group
from mixit.training.resolve import stored_config
from mixit.training.rundir import RunSummary
from mixit.training.train import run

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


def train_group_in_worker(
    config_dicts: list[JSONObject], run_dirs: list[str], threads: int | None
) -> list[RunSummary | str]:
    """Train runs as members of one batched model from this process (``train_group``)."""
    if threads is not None:
        torch.set_num_threads(threads)
    configs = [stored_config(stored) for stored in config_dicts]
    device = pinned_device()
    configs = [on_device(config, device) for config in configs]
    return train_group(configs, [Path(run_dir) for run_dir in run_dirs])


def train_in_worker(
    config_dict: JSONObject,
    run_dir: str,
    threads: int | None,
    ranks: int = 1,
    progress: Progress = "off",
) -> RunSummary:
    """Train one run from this process (a pool worker, or a submitted job: ``threads`` None
    keeps the threads the job was given); with ``ranks`` > 1 through torchrun, one process
    per rank on this worker's GPUs (on the CPU without GPUs). ``progress``: "lines" writes
    the run's progress lines to this process's stderr, the parent's."""
    import torch

    if ranks > 1:
        return _train_with_torchrun(config_dict, Path(run_dir), ranks, threads)
    if threads is not None:
        torch.set_num_threads(threads)
    config = on_device(stored_config(config_dict), pinned_device())
    return run(config, Path(run_dir), progress=progress, resume=True)


def _train_with_torchrun(
    config_dict: JSONObject, run_dir: Path, ranks: int, threads: int | None
) -> RunSummary:
    """``torchrun --standalone --nproc_per_node=RANKS -m mixit.running.rank`` on this worker's GPUs;
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
        command += [
            f"--nproc_per_node={ranks}",
            "-m",
            "mixit.running.rank",
            str(config_file),
            str(run_dir),
        ]
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
    (``mixit.training.devices``)."""
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


# The pools this process keeps once started, by (jobs, processes per run): a tuning trains its
# rungs in many batches, and a fresh pool per batch would start its workers and import torch in
# each again, seconds a worker (docs/speed.md, "Fixed costs").
_KEPT: dict[tuple[int, int], ProcessPoolExecutor] = {}


def kept_pool(jobs: int, per_run: int = 1) -> ProcessPoolExecutor:
    """``worker_pool(jobs, per_run)``, started the first time it is asked for and used by
    every later batch of runs of this process; idle workers end with it."""
    key = (jobs, per_run)
    if key not in _KEPT:
        _KEPT[key] = worker_pool(jobs, per_run)
    return _KEPT[key]


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Drop the queued runs and end the running ones; their run directories stay unfinished,
    so the next ``reproduce`` trains them again. The executor names no workers publicly, so
    this ends every child process of this one, which while training are the pools' only:
    every kept pool is forgotten with them, and the next batch starts a fresh one."""
    pool.shutdown(wait=False, cancel_futures=True)
    for kept in _KEPT.values():
        kept.shutdown(wait=False, cancel_futures=True)
    _KEPT.clear()
    for worker in multiprocessing.active_children():
        worker.terminate()


def parallel_jobs(jobs: int) -> int:
    """How many of ``jobs`` training processes make progress at once here: no more than the
    cores this process may use (the rest wait for one), which a wall-time estimate counts."""
    return min(jobs, usable_cores())


def worker_threads(jobs: int) -> int:
    """Threads per training process: the cores this process may use, shared between ``jobs``
    processes."""
    return torch.get_num_threads() if jobs == 1 else max(1, usable_cores() // jobs)


def shared_cores_note(busy: float | None) -> str:
    """A line for a machine whose cores other processes keep busy; "" for a quiet one."""
    if busy is None or busy < SHARED_FROM:
        return ""
    cores = usable_cores()
    return (
        f"this machine is shared: other processes keep about {busy:.1f} of its {cores} cores "
        "busy, and these times assume a quiet machine; beside other training a run may take "
        'several times longer (docs/speed.md, "Beside other work")'
    )


PR_SET_PDEATHSIG = 1  # prctl(2) option: the signal a process gets when its parent dies


def start_worker(parent_pid: int) -> None:
    """Call first thing in a worker: it ends with its parent (``exit_with_parent``) and
    ignores Ctrl-C, which reaches the whole process group; the parent alone decides what an
    interrupt stops."""
    exit_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # tqdm would otherwise make a named multiprocessing semaphore for its bars (a worker shows
    # none), which a worker ended by its parent leaves behind and Python then warns about.
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())


def exit_with_parent(parent_pid: int) -> None:
    """Call first thing in a worker. On Linux the kernel signals the worker when its parent
    dies (``prctl(PR_SET_PDEATHSIG)``); a parent that died before this call is caught by the
    pid check."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:
        os._exit(1)


def worker_gpus(jobs: int, per_run: int = 1) -> list[tuple[int, ...]]:
    """The GPUs of each of ``jobs`` worker processes, ``per_run`` each: worker i on GPUs
    i K .. i K + K - 1 (mod G) when G GPUs are visible, so no two workers share a GPU unless
    ``jobs`` x K > G; none (each run's own ``train.device``) on a machine without GPUs."""
    gpus = devices.gpu_count()
    if not gpus:
        return [() for _ in range(jobs)]
    return [tuple((i * per_run + j) % gpus for j in range(per_run)) for i in range(jobs)]


def worker_devices(jobs: int) -> list[str | None]:
    """One GPU per worker: worker i on ``cuda:`` i mod G; None without GPUs."""
    return [f"cuda:{gpus[0]}" if gpus else None for gpus in worker_gpus(jobs)]


def sharing_note(jobs: int, per_run: int = 1) -> str:
    """A line for a pool of ``jobs`` workers (``per_run`` GPUs each) that must share GPUs; ""
    when none does."""
    gpus, wanted = devices.gpu_count(), jobs * per_run
    if not gpus or wanted <= gpus:
        return ""
    return (
        f"--jobs {jobs} x {per_run} GPU(s) per run on {gpus} visible GPU{'s' * (gpus != 1)}: "
        f"up to {-(-wanted // gpus)} runs share a GPU's memory and time"
    )


def on_device(config: RunConfig, device: str | None) -> RunConfig:
    """``config`` on the GPU this worker is pinned to, where it asks for "auto"; the device is
    an execution setting, so the run's identity is unchanged."""
    if device is None or config.train.device != "auto":
        return config
    return with_settings(config, {"train.device": device})
