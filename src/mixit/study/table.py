"""A comparison as the console prints it (``mixit compare``, ``mixit suite``): the table of
models, what the tuning chose, the litmus reading and what ``--extend`` and ``--seeds auto``
spent."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from mixit.study.extend import extension_lines
from mixit.study.litmus import litmus_lines, spread_text


def tuning_lines(tuned: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What the tuning protocol chose for each model, a line each."""
    seed = next(iter(tuned.values()))["seed"]
    lines = [f"tuned on held-out training data, seed {seed} (docs/tuning.md):"]
    for model, t in tuned.items():
        init = f", init {t['init']}" if t.get("init") else ""
        edge = "" if t["edge"] == "interior" else f", grid {t['edge']}"
        learned = "" if t["learned"] else ", did not learn at any rate of the grid"
        floor = " (the task's budget)" if raised_budget(t) else ""
        lines.append(
            f"  {model:<11} lr {t['train.lr']:.3g}, {t['steps']} steps{floor}{init}{edge}{learned}"
        )
    return lines


def raised_budget(record: Mapping[str, Any]) -> bool:
    """Whether a tuning record's budget was raised to another model's: the task's one budget
    (``raised_from``), or the reference's under the rule before it (``reference_steps``)."""
    return "raised_from" in record or "reference_steps" in record


STOPPED_LEGEND = (
    "(stopped: how many of a model's seeds ended at each reason; budget: ran all its steps, "
    "target: reached train.stop_at, plateau: train.patience evaluations without a better one)"
)


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
    if result.get("evaluated_on") == "validation":
        title += f"; {result['metric']} is scored on the validation split, not the test split"
    lines = [title, header, "-" * len(header)]
    for row in result["rows"]:
        spread = row["std"] if len(row.get("values", [])) > 1 else None
        score = f"{row['mean']:.4f} ± {spread_text(spread)}"
        seconds = row["train_seconds"]
        steps = statistics.fmean(row.get("steps_run", [0]))
        lines.append(
            f"{row['model']:<12} {row['params_trainable']:>10,}  {score:>22}  {seconds:>8.1f}  "
            f"{steps:>7,.0f}  {_stops(row.get('stopped', []))}"
        )
    if result.get("chance") is not None:
        lines.append(f"{'chance':<12} {'':>10}  {result['chance']:>22.4f}")
    lines.append(STOPPED_LEGEND)
    if result.get("tuned"):
        lines += ["", *tuning_lines(result["tuned"])]
    lines += litmus_lines(result)
    lines += extension_lines(result)
    if "seeds_auto" in result:
        lines.append(f"({seeds_auto_text(result)})")
    return "\n".join(lines)


def seeds_auto_text(result: Mapping[str, Any]) -> str:
    """Where ``--seeds auto`` stopped, and which verdicts its interval left undecided."""
    auto = result["seeds_auto"]
    left = ", ".join(auto["undecided"]) or "none"
    return (
        f"--seeds auto: {len(result['seeds'])} seeds, from {auto['start']} up to "
        f"{auto['maximum']}; still undecided by the interval: {left}"
    )
