"""``mixit sweep``: the paper's grid search (Table 8) as an Optuna study, run by local worker
processes or a SLURM job array, every trial an ordinary (reusable) run directory.

The study uses Optuna's GridSampler, which gives trial number i the grid point i: with a
shared database (SQLite by default, any Optuna RDB URL on a cluster) every grid point is
trained exactly once, whichever worker gets it. Workers send heartbeats; the trial of a
worker that dies goes stale, is marked failed and retried with the same parameters by a
surviving (or later) worker. Rerunning a sweep trains only the grid points not finished.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mixit.checkpoint import finished_summary
from mixit.errors import TrainingDiverged, UsageError
from mixit.io import make_dir
from mixit.launchers import check_launcher, executor
from mixit.processes import start_worker
from mixit.resolve import check_runnable_here, resolve_config
from mixit.runs import run_dir_name
from mixit.tasks import TASKS, get_task
from mixit.train import run
from mixit.variants import VARIANTS

# Table 8 of the paper: the grid searched for every architecture, per task family.
_ALGORITHMIC = {
    "model.n_layer": [2, 4, 8],
    "model.n_embd": [512, 1024],
    "model.n_head": [4, 8, 16, 64],
    "train.lr": [1e-3, 5e-4, 1e-4],
    "train.batch_size": [128, 256, 512],
}
_LARGE_BATCH = {**_ALGORITHMIC, "train.batch_size": [256, 512, 1024]}
TABLE8: dict[str, dict[str, list[Any]]] = {
    "addition": _ALGORITHMIC,
    "dyck": _ALGORITHMIC,
    "modular-addition": _ALGORITHMIC,
    "retrieval": _LARGE_BATCH,
    "memorization": _LARGE_BATCH,
    "khop": {
        "model.n_layer": [5],
        "model.n_embd": [256, 512, 1024],
        "model.n_head": [8],
        "train.lr": [1e-4, 5e-4],
        "train.batch_size": [128, 256],
    },
    "sentiment": {**_LARGE_BATCH, "model.n_layer": [4, 8]},
    "lm": {**_LARGE_BATCH, "model.n_layer": [8, 12], "model.n_head": [4, 8, 16]},
}
HEARTBEAT_SECONDS, GRACE_SECONDS, MAX_RETRY = 2, 10, 3


def load_grid(task: str, grid: str) -> dict[str, list[Any]]:
    """Table 8's grid for ``task`` or a YAML file ``{dotted.key: [values]}``."""
    if grid == "table8":
        if task not in TABLE8:
            raise UsageError(f"Table 8 has no grid for task '{task}'; give --grid FILE.yaml")
        return TABLE8[task]
    import yaml

    path = Path(grid)
    try:
        loaded = yaml.safe_load(path.read_text())
    except OSError as error:
        raise UsageError(f"grid file {grid} cannot be read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"grid file {grid} is not UTF-8 text (a YAML file expected)") from None
    except yaml.YAMLError as error:
        raise UsageError(f"grid file {grid} is not YAML: {str(error).splitlines()[0]}") from None
    entries = loaded.items() if isinstance(loaded, dict) else []
    if not entries or not all(isinstance(k, str) and isinstance(v, list) and v for k, v in entries):
        raise UsageError(f"grid file {grid}: expected a mapping of dotted keys to value lists")
    return loaded


def study_name(task: str, model: str, preset: str) -> str:
    return f"{task}-{model}-{preset}"


def _quiet_optuna() -> None:
    """Optuna logs every trial and calls heartbeats and stale-trial retries experimental."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _storage(url: str) -> Any:
    import optuna
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    _quiet_optuna()
    try:
        return optuna.storages.RDBStorage(
            url,
            heartbeat_interval=HEARTBEAT_SECONDS,
            grace_period=GRACE_SECONDS,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=MAX_RETRY),
        )
    except Exception as error:  # SQLAlchemy's many kinds: a bad URL, a file that is no database
        if not type(error).__module__.startswith(("sqlalchemy", "optuna")):
            raise
        first = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise UsageError(
            f"--storage {url}: cannot open it as an Optuna study database ({first}); use "
            "sqlite:///PATH or another SQLAlchemy URL"
        ) from None


def open_study(spec: Mapping[str, Any]) -> Any:
    import optuna

    grid = spec["grid"]
    higher_is_better = _task(spec["task"]).higher_is_better
    return optuna.create_study(
        study_name=study_name(spec["task"], spec["model"], spec["preset"]),
        storage=_storage(spec["storage"]),
        sampler=optuna.samplers.GridSampler(grid, seed=0),
        direction="maximize" if higher_is_better else "minimize",
        load_if_exists=True,
    )


def _task(task: str) -> Any:
    return get_task(task)


def _taken_by_an_earlier_trial(trial: Any) -> bool:
    """Whether a lower-numbered trial is running or has completed this trial's grid point.

    Two workers asking at the same moment can be handed the same point: the grid sampler
    records a trial's point when the trial is created, so both see each other here and only
    the earlier one trains it.
    """
    from optuna.trial import TrialState

    trials = trial.study.get_trials(deepcopy=False)
    grid_id = next(t for t in trials if t.number == trial.number).system_attrs.get("grid_id")
    return any(
        other.number < trial.number
        and other.system_attrs.get("grid_id") == grid_id
        and other.state in (TrialState.RUNNING, TrialState.COMPLETE)
        for other in trials
    )


def _objective(spec: Mapping[str, Any]):
    import optuna

    def objective(trial: Any) -> float:
        if _taken_by_an_earlier_trial(trial):
            raise optuna.TrialPruned("another worker has this grid point")
        params = {
            key: trial.suggest_categorical(key, values) for key, values in spec["grid"].items()
        }
        overrides = {**spec["overrides"], **params}
        config = resolve_config(
            spec["task"], spec["model"], spec["preset"], spec["seed"], overrides
        )
        run_dir = Path(spec["out"]) / "runs" / run_dir_name(config)
        trial.set_user_attr("run_dir", str(run_dir))
        summary = finished_summary(run_dir, config)
        if summary is None:
            try:
                summary = run(config, run_dir, progress=False)
            except TrainingDiverged:
                return math.nan  # a failed trial, not retried: the grid point diverges
        return float(summary["metrics"][_task(spec["task"]).metric])

    return objective


def settled_grid_ids(study: Any) -> set[int]:
    """Grid points that are finished for good: completed, or failed by the objective itself
    (a trial failed because its worker died is retried, and so does not count)."""
    from optuna.storages import RetryHeartbeatStaleTrialCallback
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    retried = {RetryHeartbeatStaleTrialCallback.retried_trial_number(t) for t in trials}
    settled = set()
    for t in trials:
        finished = t.state == TrialState.COMPLETE or (
            t.state == TrialState.FAIL and t.number not in retried
        )
        if finished and "grid_id" in t.system_attrs:
            settled.add(t.system_attrs["grid_id"])
    return settled


def give_first_heartbeats(study: Any, given: set[int]) -> None:
    """Record one heartbeat for each running trial not seen before.

    Optuna never calls a running trial stale if it has no heartbeat at all, which is what a
    worker killed between creating its trial and its first heartbeat leaves behind: that grid
    point would then block every worker forever. One heartbeat from here lets such a trial go
    stale after the grace period like any other; a live trial's own heartbeats carry on.
    """
    from optuna.trial import TrialState

    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if trial.number not in given:
            study._storage.record_heartbeat(trial._trial_id)  # Optuna has no public handle
            given.add(trial.number)


def work(spec: Mapping[str, Any], threads: int = 1) -> None:
    """One worker: take grid points until every one is settled."""
    import torch
    from optuna.storages import fail_stale_trials
    from optuna.trial import TrialState

    torch.set_num_threads(threads)
    study = open_study(spec)
    size = math.prod(len(values) for values in spec["grid"].values())
    objective = _objective(spec)
    heartbeat_given: set[int] = set()
    while len(settled_grid_ids(study)) < size:
        give_first_heartbeats(study, heartbeat_given)
        fail_stale_trials(study)  # a dead worker's trial becomes a waiting retry
        trials = study.get_trials(deepcopy=False)
        waiting = any(t.state == TrialState.WAITING for t in trials)
        # A retry takes a trial number of its own, so count grid points, not trials.
        started = {t.system_attrs.get("grid_id") for t in trials} - {None}
        if waiting or len(started) < size:
            study.optimize(objective, n_trials=1)
        else:
            time.sleep(HEARTBEAT_SECONDS)  # the rest is running elsewhere (or going stale)


def sweep(
    task: str,
    model: str,
    preset: str = "paper",
    grid: str = "table8",
    out: str | Path = "runs/sweep",
    storage: str | None = None,
    workers: int = 1,
    launcher: str = "local",
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Run (or complete) the grid search; returns one row per trial, best first."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    launch = _launcher(launcher)  # before anything is written
    values = load_grid(task, grid)
    resolve_config(task, model, preset, seed, overrides)  # fail fast on bad names and keys
    for point in itertools.product(*values.values()):  # and on a bad grid value
        config = resolve_config(
            task,
            model,
            preset,
            seed,
            {**(overrides or {}), **dict(zip(values, point, strict=True))},
        )
        if launcher == "local":
            check_runnable_here(config)
    out = make_dir(out)
    spec = {
        "task": task,
        "model": model,
        "preset": preset,
        "seed": seed,
        "grid": values,
        "overrides": dict(overrides or {}),
        "out": str(out),
        "storage": storage or f"sqlite:///{(out / 'study.db').resolve()}",
    }
    open_study(spec)  # create it once, before the workers race to
    launch(spec, workers, out)
    return trial_rows(spec)


def _launcher(name: str) -> Callable[[Mapping[str, Any], int, Path], None]:
    check_launcher(name)
    if name == "local":
        return lambda spec, workers, out: _run_local(spec, workers)
    return lambda spec, workers, out: _submit_workers(spec, workers, out, name)


def _run_local(spec: Mapping[str, Any], workers: int) -> None:
    if workers == 1:
        work(spec)
        return
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_local_worker, args=(dict(spec), os.getpid()))
        for _ in range(workers)
    ]
    for process in processes:
        process.start()
    try:
        for process in processes:
            process.join()
    except BaseException:  # Ctrl-C: their trials go stale and are retried by the next sweep
        for process in processes:
            process.terminate()
        raise


def _local_worker(spec: Mapping[str, Any], parent_pid: int) -> None:
    start_worker(parent_pid)
    work(spec, 1)


def _submit_workers(spec: Mapping[str, Any], workers: int, out: Path, launcher: str) -> None:
    """``workers`` sweep workers as one submitit job array; they share the study's trials."""
    array = executor(launcher, out / "slurm", {"slurm_array_parallelism": workers})
    jobs = array.map_array(work, [dict(spec)] * workers)
    print(f"submitted {len(jobs)} workers ({launcher}); logs in {out / 'slurm'}")


def trial_rows(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    from optuna.trial import TrialState

    study = open_study(spec)
    rows = [
        {
            "number": t.number,
            "value": t.value,
            "params": t.params,
            "run_dir": t.user_attrs.get("run_dir"),
        }
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    ]
    lower = study.direction.name == "MINIMIZE"
    return sorted(rows, key=lambda r: r["value"] if lower else -r["value"])


def best_configs(storage: str) -> list[dict[str, Any]]:
    """The best trial of every study in ``storage``: task, model, preset, value, overrides."""
    import optuna

    best = []
    opened = _storage(storage)
    for summary in optuna.get_all_study_summaries(opened):
        study = optuna.load_study(study_name=summary.study_name, storage=opened)
        try:
            trial = study.best_trial
        except ValueError:
            continue  # no finished trial yet
        task, model, preset = _split_name(summary.study_name)
        best.append(
            {
                "task": task,
                "model": model,
                "preset": preset,
                "value": trial.value,
                "overrides": trial.params,
            }
        )
    return best


def _split_name(name: str) -> tuple[str, str, str]:
    for task in TASKS:
        for model in VARIANTS:
            if name.startswith(f"{task}-{model}-"):
                return task, model, name[len(task) + len(model) + 2 :]
    raise UsageError(f"study '{name}' is not a mixit sweep study (TASK-MODEL-PRESET)")
