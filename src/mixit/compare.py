"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from mixit.config import RunConfig
from mixit.errors import UsageError
from mixit.io import write_json
from mixit.resolve import resolve_config, resolve_device
from mixit.runs import pending_timings, run_dir_name, train_missing
from mixit.tasks import get_task
from mixit.variants import VARIANTS

# The litmus test (the paper's section 5): a variant "matches" the standard model when its
# mean is at most this far behind (in the metric's units); `mixit compare --tolerance`.
DEFAULT_TOLERANCE = {"test_accuracy": 0.02, "log_ppl": 0.05}
# The reference must beat chance by this many tolerances on every seed to count as having
# learned the task. 5 x 0.02 puts retrieval's bar at about 0.37 over its context-guess chance
# of 0.27, above the 0.30-0.34 that standard seeds without an induction circuit reach, and
# counts tiny sentiment's 0.74 over its 0.58 majority class as learned. Chosen after seeing
# those numbers, before the fresh seeds that check it.
LEARNED_MARGIN = 5
# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom; the normal's beyond.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
# Metrics that differ by exactly the tolerance count as within it, whatever float subtraction
# leaves in the last bits.
ROUNDING = 1e-9
NO_VERDICT = "no verdict: its seeds fall on both sides of the tolerance"


def interval_95(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95 % t-interval of the mean of ``values``; None for fewer than two."""
    if len(values) < 2:
        return None
    half = (T_975[len(values) - 2] if len(values) <= 31 else 1.96) * statistics.stdev(values)
    half /= math.sqrt(len(values))
    return statistics.fmean(values) - half, statistics.fmean(values) + half


def _sign(result: Mapping[str, Any]) -> float:
    """+1 where a higher metric is better (the task's ``higher_is_better``), -1 where lower."""
    return 1.0 if result["higher_is_better"] else -1.0


def reference_problems(result: Mapping[str, Any], tolerance: float) -> list[str]:
    """Why the standard model cannot be the litmus test's reference, [] when it can: a seed
    not clearly beyond the task's chance (``LEARNED_MARGIN`` tolerances), another variant
    better by more than the tolerance, or seeds that disagree by more than it."""
    rows = {row["model"]: row for row in result["rows"]}
    values = rows["standard"]["values"]
    better = _sign(result)
    problems = []
    if result.get("chance") is not None:
        bar = result["chance"] + better * LEARNED_MARGIN * tolerance
        seeds = result.get("seeds", range(len(values)))
        short = [(s, v) for s, v in zip(seeds, values, strict=True) if better * (v - bar) < 0]
        if short:
            listed = ", ".join(f"{v:.3f} (seed {s})" for s, v in short)
            problems.append(
                f"standard reaches {listed}, not clearly beyond chance {result['chance']:.3f} "
                f"(the bar: {bar:.3f})"
            )
    for model, row in rows.items():
        ahead = better * (row["mean"] - rows["standard"]["mean"])
        if ahead > tolerance + ROUNDING:
            problems.append(f"{model} beats standard by {ahead:.3f}")
    if max(values) - min(values) > tolerance + ROUNDING:
        problems.append(
            f"standard's seeds disagree by {max(values) - min(values):.3f} "
            f"({min(values):.3f} to {max(values):.3f})"
        )
    return problems


def litmus(result: Mapping[str, Any], tolerance: float) -> list[dict[str, Any]]:
    """Each variant against the standard model, seed by seed on the same data: the mean
    difference, its spread and 95 % interval, and the verdict: ``matches`` is True when every
    seed is at most ``tolerance`` worse, False when every seed is worse by more, None when the
    seeds disagree. [] without a standard row."""
    rows = {row["model"]: row for row in result["rows"]}
    if "standard" not in rows:
        return []
    better = _sign(result)
    reference = rows["standard"].get("values", [rows["standard"]["mean"]])
    readings = []
    for model, row in rows.items():
        if model == "standard":
            continue
        paired = [v - s for v, s in zip(row.get("values", [row["mean"]]), reference, strict=True)]
        within = {better * d >= -tolerance - ROUNDING for d in paired}
        matches = within.pop() if len(within) == 1 else None
        readings.append(
            {
                "model": model,
                "difference": row["mean"] - rows["standard"]["mean"],
                "spread": statistics.stdev(paired) if len(paired) > 1 else 0.0,
                "interval": interval_95(paired),
                "matches": matches,
                "reading": _reading(model, matches),
            }
        )
    return readings


def _reading(model: str, matches: bool | None) -> str:
    if matches is None:
        return NO_VERDICT
    variant = VARIANTS[model]
    return variant.if_matches if matches else variant.if_short


def reading(result: Mapping[str, Any], tolerance: float, steps: int) -> dict[str, Any]:
    """compare.json's ``litmus``: the verdicts, or, when the standard model cannot be the
    reference, why not and the budget to try next instead of any verdict."""
    if not any(row["model"] == "standard" for row in result["rows"]):
        return {"tolerance": tolerance, "rows": []}
    problems = reference_problems(result, tolerance)
    if problems:
        return {
            "tolerance": tolerance,
            "rows": [],
            "no_reference": problems,
            "next": f"train.steps={2 * steps} (or more seeds, or a larger --tolerance)",
        }
    return {"tolerance": tolerance, "rows": litmus(result, tolerance)}


def resolve_all(
    task: str,
    models: Sequence[str],
    preset: str,
    seeds: range,
    overrides: Mapping[str, Any] | None,
    per_model: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[tuple[str, int], RunConfig]:
    """Every (model, seed)'s resolved config, first, so a bad model name or key fails before
    any training or timing; ``per_model`` adds a model's own overrides (its tuned values)."""
    return {
        (m, s): resolve_config(
            task, m, preset, s, {**(overrides or {}), **(per_model or {}).get(m, {})}
        )
        for m in models
        for s in seeds
    }


TUNABLE = ("lr",)
# `compare --tune lr`: each model's learning rate among these multiples of its preset's.
LR_FACTORS = (1 / 3, 1.0, 3.0)
# The share of the training split held out to choose on (train.validation_fraction).
VALIDATION_FRACTION = 0.1


def tune_lr(
    task: str,
    models: Sequence[str],
    preset: str,
    seed: int,
    out: str | Path,
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    factors: Sequence[float] = LR_FACTORS,
) -> dict[str, dict[str, Any]]:
    """Each model's learning rate: the value of the grid (``factors`` times the model's
    resolved ``train.lr``) whose run on ``seed`` scores best on a validation split carved from
    the training data, never on the test split. Its runs land in ``out/runs`` beside the
    others (their configs hold the validation split, so their names differ). Returns
    ``{model: {"train.lr": chosen, "validation": {lr: metric}}}``."""
    spec = get_task(task)
    better = 1.0 if spec.higher_is_better else -1.0
    configs = {}
    for model in models:
        preset_lr = resolve_config(task, model, preset, seed, overrides).train.lr
        for lr in (preset_lr * factor for factor in factors):
            tuning = {**(overrides or {}), "train.lr": lr}
            tuning["train.validation_fraction"] = VALIDATION_FRACTION
            configs[model, lr] = resolve_config(task, model, preset, seed, tuning)
    summaries, _ = train_missing(configs, Path(out) / "runs", progress=progress, each=True)
    chosen = {}
    for model in models:
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
) -> dict[str, Any]:
    """Train each model with seeds ``seed .. seed+seeds-1`` on the same data.

    ``tune=["lr"]`` first picks each model's learning rate (``tune_lr``, on a validation
    split of the training data) and trains every seed at it; ``compare.json`` records the
    choice under ``tuned``.

    Every run lands in ``out/runs`` under its config's hash (``mixit.runs``), where
    `reproduce` keeps its runs too: a finished run of the same config, from either command, is
    read back instead of retrained. Writes and returns ``out/compare.json``, with the
    litmus reading of each variant against the standard model (``litmus``; ``tolerance``
    defaults to ``DEFAULT_TOLERANCE`` of the task's metric).
    """
    models = list(models or VARIANTS)
    spec = get_task(task)
    unknown = [name for name in tune if name not in TUNABLE]
    if unknown:
        raise UsageError(f"--tune '{unknown[0]}' is not tunable; choose from: {', '.join(TUNABLE)}")
    seed_range = range(seed, seed + seeds)
    resolve_all(task, models, preset, seed_range, overrides)  # bad input fails before tuning
    tuned = tune_lr(task, models, preset, seed, out, overrides, progress) if tune else {}
    chosen = {model: {"train.lr": t["train.lr"]} for model, t in tuned.items()}
    configs = resolve_all(task, models, preset, seed_range, overrides, chosen)
    trained, _ = train_missing(configs, Path(out) / "runs", progress=progress, each=True)
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


def estimate(
    task: str,
    models: Sequence[str] | None = None,
    preset: str = "tiny",
    seed: int = 0,
    seeds: int = 1,
    out: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What `compare` (or, with one model and seed, `train`) would cost on this machine,
    without training or writing anything: each model's config is timed once (its seeds cost
    the same, see ``time_training``); a finished run in ``out`` costs nothing."""
    models = list(models or VARIANTS)
    configs = resolve_all(task, models, preset, range(seed, seed + seeds), overrides)
    timings = pending_timings(configs, None if out is None else Path(out) / "runs")
    rows = []
    for model in models:
        names = dict.fromkeys(run_dir_name(c) for (m, _), c in configs.items() if m == model)
        pending = [timings[name] for name in names if name in timings]
        timing = pending[0] if pending else {"step_seconds": 0.0, "run_seconds": 0.0}
        rows.append(
            {
                "model": model,
                "runs": len(pending),
                "steps": configs[model, seed].train.steps,
                "step_seconds": timing["step_seconds"],
                "run_seconds": timing["run_seconds"],
            }
        )
    device = resolve_device(configs[models[0], seed].train.device)
    return {
        "task": task,
        "preset": preset,
        "device": f"{device.type}, {torch.get_num_threads()} threads",
        "rows": rows,
        "total_seconds": sum(row["runs"] * row["run_seconds"] for row in rows),
    }


def format_estimate(result: Mapping[str, Any]) -> str:
    """The estimate as a plain-text table, and the total with the runs one after another."""
    title = (
        f"task: {result['task']} (preset {result['preset']}), timed on this machine "
        f"({result['device']}); nothing was trained"
    )
    header = f"{'model':<12} {'runs':>5} {'steps':>7} {'ms/step':>9} {'per run':>10}"
    lines = [title, header, "-" * len(header)]
    for row in result["rows"]:
        lines.append(
            f"{row['model']:<12} {row['runs']:>5} {row['steps']:>7,} "
            f"{row['step_seconds'] * 1e3:>9.1f} {duration(row['run_seconds']):>10}"
        )
    lines.append(f"about {duration(result['total_seconds'])} in all, one run after another")
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``33.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:,.1f} h"


def _stops(reasons: Sequence[str]) -> str:
    """``target 2, budget 1``: how many of a model's runs stopped for each reason."""
    counts = {reason: reasons.count(reason) for reason in dict.fromkeys(reasons)}
    return ", ".join(f"{reason} {count}" for reason, count in counts.items())


def _litmus_lines(result: Mapping[str, Any]) -> list[str]:
    reading = result.get("litmus", {})
    if reading.get("no_reference"):
        return [
            "",
            "litmus test: no verdict, the standard model is no reference here:",
            *(f"  {problem}" for problem in reading["no_reference"]),
            f"  try next: {reading['next']}",
        ]
    if not reading.get("rows"):
        return []
    lines = [
        "",
        f"litmus test (a model matches standard when every seed is at most "
        f"{reading['tolerance']:g} worse in {result['metric']}; per-seed difference, its "
        "spread and 95 % interval):",
    ]
    verdicts = {True: "matches", False: "falls short", None: "unsure"}
    for row in reading["rows"]:
        interval = row.get("interval")
        shown = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "-"
        lines.append(
            f"  {row['model']:<11} {row['difference']:+.4f} ± {row.get('spread', 0.0):.4f}  "
            f"{shown:>16}  {verdicts[row['matches']]:<11}  {row['reading']}"
        )
    if len(result.get("seeds", [])) == 1:
        lines.append("(one seed: nothing here is certain; use --seeds 3 or more)")
    return lines


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
    lines += _litmus_lines(result)
    return "\n".join(lines)
