"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixit.config import RunConfig
from mixit.errors import RunsPending, UsageError
from mixit.io import write_json
from mixit.launchers import LOCAL, Launch
from mixit.litmus import DEFAULT_TOLERANCE, litmus_lines, reading
from mixit.resolve import resolve_config
from mixit.results import write_results_csv
from mixit.runs import train_missing
from mixit.tasks import get_task
from mixit.variants import VARIANTS


@dataclass(frozen=True)
class Comparison:
    """What a comparison trains: ``models`` on ``task`` at ``preset``, one run per seed of
    ``seeds``, with ``overrides`` on every run, into ``out/runs`` (None: nowhere yet)."""

    task: str
    models: tuple[str, ...]
    preset: str
    seeds: range
    out: Path | None
    overrides: Mapping[str, Any]

    def configs(
        self, per_model: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[tuple[str, int], RunConfig]:
        """Every (model, seed)'s resolved config, first, so a bad model name or key fails
        before any training or timing; ``per_model`` adds a model's own overrides (its tuned
        values)."""
        return {
            (m, s): resolve_config(
                self.task, m, self.preset, s, {**self.overrides, **(per_model or {}).get(m, {})}
            )
            for m in self.models
            for s in self.seeds
        }


TUNABLE = ("lr",)
# `compare --tune lr`: each model's learning rate among these multiples of its preset's.
LR_FACTORS = (1 / 3, 1.0, 3.0)
# The share of the training split held out to choose on (train.validation_fraction).
VALIDATION_FRACTION = 0.1


def tune_lr(
    plan: Comparison,
    progress: bool | None = None,
    factors: Sequence[float] = LR_FACTORS,
    jobs: int = 1,
) -> dict[str, dict[str, Any]]:
    """Each model's learning rate: the value of the grid (``factors`` times the model's
    resolved ``train.lr``) whose run on the plan's first seed scores best on a validation
    split carved from the training data, never on the test split. Its runs land in
    ``out/runs`` beside the others (their configs hold the validation split, so their names
    differ). Returns
    ``{model: {"train.lr": chosen, "validation": {lr: metric}}}``; ``jobs`` runs train at once."""
    task, preset, seed, out = plan.task, plan.preset, plan.seeds.start, plan.out
    spec = get_task(task)
    better = 1.0 if spec.higher_is_better else -1.0
    configs = {}
    for model in plan.models:
        preset_lr = resolve_config(task, model, preset, seed, plan.overrides).train.lr
        for lr in (preset_lr * factor for factor in factors):
            tuning = {**plan.overrides, "train.lr": lr}
            tuning["train.validation_fraction"] = VALIDATION_FRACTION
            configs[model, lr] = resolve_config(task, model, preset, seed, tuning)
    local = Launch(jobs=jobs)
    summaries, _ = train_missing(configs, Path(out) / "runs", progress, each=True, launch=local)
    chosen = {}
    for model in plan.models:
        scores = {lr: summaries[m, lr]["metrics"][spec.metric] for m, lr in configs if m == model}
        best = max(scores, key=lambda lr: better * scores[lr])
        chosen[model] = {"train.lr": best, "validation": scores}
    return chosen


def task_chance(config: RunConfig) -> float:
    """The task's chance level for runs whose summaries predate it: from their data."""
    spec = get_task(config.task_name)
    return spec.chance(spec.make_data(config.task, config.seed), config.task)


def compare(
    task: str,
    models: Sequence[str] | None = None,
    preset: str = "tiny",
    seed: int = 0,
    seeds: int = 1,
    out: str | Path = "runs/compare",
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    tolerance: float | None = None,
    tune: Sequence[str] = (),
    launch: Launch = LOCAL,
) -> dict[str, Any]:
    """Train each model with seeds ``seed .. seed+seeds-1`` on the same data.

    ``tune=["lr"]`` first picks each model's learning rate (``tune_lr``, on a validation
    split of the training data) and trains every seed at it; ``compare.json`` records the
    choice under ``tuned``.

    Every run lands in ``out/runs`` under its config's hash (``mixit.runs``), where
    `reproduce` keeps its runs too: a finished run of the same config, from either command, is
    read back instead of retrained. Writes and returns ``out/compare.json``, with the
    litmus reading of each variant against the standard model (``litmus``; ``tolerance``
    defaults to ``DEFAULT_TOLERANCE`` of the task's metric). ``launch``: see ``train_all``.
    """
    models = list(models or VARIANTS)
    spec = get_task(task)
    unknown = [name for name in tune if name not in TUNABLE]
    if unknown:
        raise UsageError(f"--tune '{unknown[0]}' is not tunable; choose from: {', '.join(TUNABLE)}")
    seed_range = range(seed, seed + seeds)
    plan = Comparison(task, tuple(models), preset, seed_range, Path(out), dict(overrides or {}))
    plan.configs()  # bad input fails before tuning
    tuned = tune_lr(plan, progress, jobs=launch.jobs) if tune else {}
    chosen = {model: {"train.lr": t["train.lr"]} for model, t in tuned.items()}
    configs = plan.configs(chosen)
    trained = train_all(configs, Path(out), progress, launch)
    by_model = {model: [trained[model, s] for s in seed_range] for model in models}
    rows = [table_row(model, summaries, spec.metric) for model, summaries in by_model.items()]
    chances = [s["chance"] for summaries in by_model.values() for s in summaries if "chance" in s]
    result = {
        "task": task,
        "metric": spec.metric,
        "higher_is_better": spec.higher_is_better,
        "preset": preset,
        "seeds": list(range(seed, seed + seeds)),
        "overrides": dict(overrides or {}),
        "chance": statistics.fmean(chances) if chances else task_chance(configs[models[0], seed]),
        "rows": rows,
    }
    if tuned:
        result["tuned"] = {
            model: {**t, "validation": list(t["validation"].items())} for model, t in tuned.items()
        }
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE.get(spec.metric, 0.02)
    steps = configs.get(("standard", seed), configs[models[0], seed]).train.steps
    result["litmus"] = reading(result, tolerance, steps)
    write_json(Path(out) / "compare.json", result)
    return result


def train_all(
    configs: Mapping[tuple[str, int], RunConfig],
    out: Path,
    progress: bool | None,
    launch: Launch,
) -> dict[tuple[str, int], dict[str, Any]]:
    """Every run's summary, training the missing ones into ``out/runs`` (and writing
    ``out/results.csv``). ``launch`` submits them as a job array (``mixit.launchers``);
    without waiting, ``RunsPending`` says how many are still in flight."""
    trained, _ = train_missing(configs, out / "runs", progress, each=True, launch=launch)
    missing = len(configs) - len(trained)
    if missing:
        raise RunsPending(
            f"{missing} of {len(configs)} runs are not finished yet; the same command collects "
            "them once their jobs end"
        )
    write_results_csv(out / "results.csv", trained.values())
    return trained


def table_row(model: str, summaries: Sequence[Mapping[str, Any]], metric: str) -> dict[str, Any]:
    """One model's row of compare.json from its seeds' summaries."""
    values = [summary["metrics"][metric] for summary in summaries]
    return {
        "model": model,
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "values": values,
        "params_trainable": summaries[0]["params_trainable"],
        "train_seconds": statistics.fmean(s["train_seconds"] for s in summaries),
        # Runs from before early stopping used their whole budget.
        "steps_run": [s.get("steps_run", s["steps"]) for s in summaries],
        "stopped": [s.get("stopped", "budget") for s in summaries],
    }


def _stops(reasons: Sequence[str]) -> str:
    """``target 2, budget 1``: how many of a model's runs stopped for each reason."""
    counts = {reason: reasons.count(reason) for reason in dict.fromkeys(reasons)}
    return ", ".join(f"{reason} {count}" for reason, count in counts.items())


def format_table(result: Mapping[str, Any]) -> str:
    """A plain-text table: model, trainable parameters, metric mean ± std, seconds per run,
    the mean steps each run trained and why the runs stopped (solved, plateau or budget)."""
    header = (
        f"{'model':<12} {'trainable':>10}  {result['metric']:>22}  {'seconds':>8}  "
        f"{'steps':>7}  stopped"
    )
    changed = " ".join(f"{k}={v}" for k, v in result.get("overrides", {}).items())
    title = f"task: {result['task']} (preset {result['preset']}{', ' + changed if changed else ''})"
    lines = [title, header, "-" * len(header)]
    for row in result["rows"]:
        score = f"{row['mean']:.4f} ± {row['std']:.4f}"
        seconds = row["train_seconds"]
        steps = statistics.fmean(row.get("steps_run", [0]))
        lines.append(
            f"{row['model']:<12} {row['params_trainable']:>10,}  {score:>22}  {seconds:>8.1f}  "
            f"{steps:>7,.0f}  {_stops(row.get('stopped', []))}"
        )
    if result.get("chance") is not None:
        lines.append(f"{'chance':<12} {'':>10}  {result['chance']:>22.4f}")
    if result.get("tuned"):
        chosen = ", ".join(f"{m} {t['train.lr']:.3g}" for m, t in result["tuned"].items())
        lines += ["", f"learning rates chosen on held-out training data: {chosen}"]
    lines += litmus_lines(result)
    return "\n".join(lines)
