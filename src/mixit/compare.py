"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from mixit.checkpoint import finished_summary
from mixit.config import RunConfig
from mixit.io import write_json
from mixit.train import get_task, resolve_config, resolve_device, run, time_training
from mixit.variants import VARIANTS

# The litmus test (the paper's section 5): a variant "matches" the standard model when its
# mean is at most this far behind (in the metric's units); `mixit compare --tolerance`.
DEFAULT_TOLERANCE = {"test_accuracy": 0.02, "log_ppl": 0.05}
LOWER_IS_BETTER = ("log_ppl",)
# What each variant matching (True) or falling short of (False) the standard model says
# about the task.
READING = {
    "frozen-qk": {
        True: "learned queries and keys are not needed",
        False: "learned queries and keys are needed",
    },
    "frozen-mlp": {
        True: "the task keeps little in trained MLP weights",
        False: "the MLPs carry what the task needs",
    },
    "mixit": {
        True: "no input-dependent attention is needed: fixed mixing suffices",
        False: "input-dependent attention is needed (a circuit such as an induction head)",
    },
    "random": {
        True: "embeddings and output head alone suffice",
        False: "trained attention or MLP blocks are needed",
    },
}


def litmus(result: Mapping[str, Any], tolerance: float) -> list[dict[str, Any]]:
    """Each variant's difference to the standard model's mean, whether it matches (at most
    ``tolerance`` worse) and what that says about the task; [] without a standard row."""
    means = {row["model"]: row["mean"] for row in result["rows"]}
    if "standard" not in means:
        return []
    better = -1.0 if result["metric"] in LOWER_IS_BETTER else 1.0
    readings = []
    for model, value in means.items():
        if model == "standard":
            continue
        difference = value - means["standard"]
        matches = better * difference >= -tolerance
        readings.append(
            {
                "model": model,
                "difference": difference,
                "matches": matches,
                "reading": READING[model][matches],
            }
        )
    return readings


def resolve_all(
    task: str,
    models: Sequence[str],
    preset: str,
    seeds: range,
    overrides: Mapping[str, Any] | None,
) -> dict[tuple[str, int], RunConfig]:
    """Every (model, seed)'s resolved config, first, so a bad model name or key fails before
    any training or timing."""
    return {(m, s): resolve_config(task, m, preset, s, overrides) for m in models for s in seeds}


def run_dir(out: str | Path, model: str, seed: int) -> Path:
    """Where `compare` keeps a model's run for one seed: ``out/MODEL/seedN``."""
    return Path(out) / model / f"seed{seed}"


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
) -> dict[str, Any]:
    """Train each model with seeds ``seed .. seed+seeds-1`` on the same data.

    Every run lands in ``out/MODEL/seedN``; a finished run whose resolved config is unchanged
    is read back instead of retrained. Writes and returns ``out/compare.json``, with the
    litmus reading of each variant against the standard model (``litmus``; ``tolerance``
    defaults to ``DEFAULT_TOLERANCE`` of the task's metric).
    """
    models = list(models or VARIANTS)
    spec = get_task(task)
    configs = resolve_all(task, models, preset, range(seed, seed + seeds), overrides)
    rows = []
    for model in models:
        summaries = []
        for s in range(seed, seed + seeds):
            folder = run_dir(out, model, s)
            summaries.append(
                finished_summary(folder, configs[model, s])
                or run(configs[model, s], folder, progress)
            )
        values = [summary["metrics"][spec.metric] for summary in summaries]
        rows.append(
            {
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
        )
    result = {
        "task": task,
        "metric": spec.metric,
        "preset": preset,
        "seeds": list(range(seed, seed + seeds)),
        "overrides": dict(overrides or {}),
        "rows": rows,
    }
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE.get(spec.metric, 0.02)
    result["litmus"] = {"tolerance": tolerance, "rows": litmus(result, tolerance)}
    write_json(Path(out) / "compare.json", result)
    return result


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
    seed_range = range(seed, seed + seeds)
    configs = resolve_all(task, models, preset, seed_range, overrides)
    rows = []
    for model in models:
        pending = [
            s
            for s in seed_range
            if out is None or finished_summary(run_dir(out, model, s), configs[model, s]) is None
        ]
        config = configs[model, seed]
        timing = time_training(config) if pending else {"step_seconds": 0.0, "run_seconds": 0.0}
        rows.append(
            {
                "model": model,
                "runs": len(pending),
                "steps": config.train.steps,
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
    reading = result.get("litmus", {})
    if reading.get("rows"):
        lines += [
            "",
            f"litmus test (a model matches standard when at most {reading['tolerance']:g} "
            f"worse in {result['metric']}):",
        ]
        for row in reading["rows"]:
            verdict = "matches" if row["matches"] else "falls short"
            lines.append(
                f"  {row['model']:<11} {row['difference']:+.4f}  {verdict:<11}  {row['reading']}"
            )
        if len(result.get("seeds", [])) == 1:
            lines.append("(one seed: a difference near the margin may be noise; use --seeds 3)")
    return "\n".join(lines)
