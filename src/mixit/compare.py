"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.checkpoint import finished_summary
from mixit.io import write_json
from mixit.train import get_task, resolve_config, run
from mixit.variants import VARIANTS


def compare(
    task: str,
    models: Sequence[str] | None = None,
    preset: str = "tiny",
    seed: int = 0,
    seeds: int = 1,
    out: str | Path = "runs/compare",
    overrides: Mapping[str, Any] | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Train each model with seeds ``seed .. seed+seeds-1`` on the same data.

    Every run lands in ``out/MODEL/seedN``; a finished run whose resolved config is unchanged
    is read back instead of retrained. Writes and returns ``out/compare.json``.
    """
    models = list(models or VARIANTS)
    spec = get_task(task)
    # Resolve everything first, so a bad model name or key fails before any training.
    configs = {
        (m, s): resolve_config(task, m, preset, s, overrides)
        for m in models
        for s in range(seed, seed + seeds)
    }
    out = Path(out)
    rows = []
    for model in models:
        summaries = []
        for s in range(seed, seed + seeds):
            run_dir = out / model / f"seed{s}"
            summaries.append(
                finished_summary(run_dir, configs[model, s])
                or run(configs[model, s], run_dir, progress)
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
    write_json(out / "compare.json", result)
    return result


def format_table(result: Mapping[str, Any]) -> str:
    """A plain-text table: model, trainable parameters, metric mean ± std, seconds per run."""
    header = f"{'model':<12} {'trainable':>10}  {result['metric']:>22}  {'seconds':>8}"
    changed = " ".join(f"{k}={v}" for k, v in result.get("overrides", {}).items())
    title = f"task: {result['task']} (preset {result['preset']}{', ' + changed if changed else ''})"
    lines = [title, header, "-" * len(header)]
    for row in result["rows"]:
        score = f"{row['mean']:.4f} ± {row['std']:.4f}"
        seconds = row["train_seconds"]
        lines.append(
            f"{row['model']:<12} {row['params_trainable']:>10,}  {score:>22}  {seconds:>8.1f}"
        )
    return "\n".join(lines)
