"""``mixit sweep``: the paper's grid search (Table 8) as an Optuna study.

Every grid point is an ordinary run: the grid's configs train through ``runs.train_missing``
as any plan's do (here, ``--jobs`` at a time, or as one job array), finished ones are read
back, and each point's result is recorded as a trial of the study (SQLite in OUT by default,
any Optuna RDB URL with ``--storage``), from which ``--best`` reads the best configuration. A
point that diverges is recorded as a failed trial and the others go on. Rerunning a sweep
trains only the points not finished and records each point once.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.errors import RunsFailed, RunsPending, UsageError
from mixit.common.io import JSONObject, make_dir, read_json
from mixit.config.overrides import Setting, Settings
from mixit.models.variants import VARIANTS
from mixit.running.launchers import LOCAL, Launch
from mixit.running.runs import train_missing
from mixit.tasks import TASKS, get_task
from mixit.training.resolve import check_runnable_here, resolve_config

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


def _storage(url: str) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # it logs every trial
    try:
        return optuna.storages.RDBStorage(url)
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

    higher_is_better = get_task(spec["task"]).higher_is_better
    return optuna.create_study(
        study_name=study_name(spec["task"], spec["model"], spec["preset"]),
        storage=_storage(spec["storage"]),
        direction="maximize" if higher_is_better else "minimize",
        load_if_exists=True,
    )


def grid_points(values: Mapping[str, list[Setting]]) -> list[dict[str, Setting]]:
    """Every point of the grid, in the grid's order: ``{dotted.key: value}``."""
    return [dict(zip(values, point, strict=True)) for point in itertools.product(*values.values())]


def _point_key(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, default=str)


def sweep(
    task: str,
    model: str,
    preset: str = "paper",
    grid: str = "table8",
    out: str | Path = "runs/sweep",
    *,
    storage: str | None = None,
    seed: int = 0,
    overrides: Settings | None = None,
    launch: Launch = LOCAL,
    progress: bool | None = False,
) -> list[dict[str, Any]]:
    """Train (or complete) the grid search and record it in its study; returns one row per
    finished point, best first. ``launch``: where the missing points train (``train_missing``)."""
    values = load_grid(task, grid)
    points = grid_points(values)
    base = dict(overrides or {})
    configs = {  # every point resolved first: a bad name, key or grid value fails here
        i: resolve_config(task, model, preset, seed, {**base, **point})
        for i, point in enumerate(points)
    }
    if not launch.submits:  # a device or size this machine lacks fails before the study exists
        for config in configs.values():
            check_runnable_here(config)
    out = make_dir(out)
    spec = {"task": task, "model": model, "preset": preset, "grid": values}
    spec["storage"] = storage or f"sqlite:///{(out / 'study.db').resolve()}"
    study = open_study(spec)
    settled = _settled(study)
    missing = {i: c for i, c in configs.items() if _point_key(points[i]) not in settled}
    diverged: list[int] = []
    try:
        summaries, _ = train_missing(
            missing, out / "runs", progress, launch=launch, diverged=diverged
        )
    except RunsFailed:  # submitted points that ended without a summary: keep the others
        summaries, _ = train_missing(missing, out / "runs", train=False)
        _record(study, values, points, summaries, diverged, get_task(task).metric)
        raise
    _record(study, values, points, summaries, diverged, get_task(task).metric)
    in_flight = len(missing) - len(summaries) - len(diverged)
    if in_flight:  # submitted without waiting
        raise RunsPending(
            f"{in_flight} of {len(points)} grid points are not finished yet; the same command "
            "records them once their jobs end"
        )
    return trial_rows(spec)


def _settled(study: Any) -> set[str]:
    """The points the study holds a result for: finished, or failed by diverging."""
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.FAIL)
    return {_point_key(t.params) for t in study.get_trials(deepcopy=False, states=states)}


def _record(
    study: Any,
    values: Mapping[str, list[Any]],
    points: list[dict[str, Setting]],
    summaries: Mapping[int, Mapping[str, Any]],
    diverged: list[int],
    metric: str,
) -> None:
    """Add a trial for each point finished (its metric and run directory) or diverged (a
    failed trial), unless the study holds one already."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState, create_trial

    distributions = {key: CategoricalDistribution(choices) for key, choices in values.items()}
    settled = _settled(study)
    for i, point in enumerate(points):
        if _point_key(point) in settled:
            continue
        if i in summaries:
            value = float(summaries[i]["metrics"][metric])
            run_dir = {"run_dir": summaries[i]["run_dir"]}
            study.add_trial(
                create_trial(
                    params=point, distributions=distributions, value=value, user_attrs=run_dir
                )
            )
        elif i in diverged:
            failed = TrialState.FAIL
            study.add_trial(create_trial(params=point, distributions=distributions, state=failed))


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


def best_configs(storage: str) -> list[JSONObject]:
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
        # Longest first: a name that begins with another's (mixit-learned, mixit) is its own.
        for model in sorted(VARIANTS, key=len, reverse=True):
            if name.startswith(f"{task}-{model}-"):
                return task, model, name[len(task) + len(model) + 2 :]
    raise UsageError(f"study '{name}' is not a mixit sweep study (TASK-MODEL-PRESET)")


def read_best(path: str | Path) -> dict[tuple[str, str], JSONObject]:
    """``{(task, model): overrides}`` from a ``best.json`` written by ``mixit sweep --best``."""
    expected = f"--tuned {path}: expected the best.json that `mixit sweep --best` writes"
    rows = read_json(path, f"--tuned {path}")
    try:
        return {(row["task"], row["model"]): dict(row["overrides"]) for row in rows}
    except (KeyError, TypeError, ValueError):  # JSON of another shape
        raise UsageError(expected) from None
