"""A comparison as the console prints it (``mixit compare``, ``mixit suite``): the table of
models, what the tuning chose, the litmus reading and what ``--extend`` and ``--seeds auto``
spent."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from mixit.models.variants import beyond_paper
from mixit.study.extend import EXTEND_CAP, extension_lines
from mixit.study.litmus import DOES_NOT_DISCRIMINATE, VERDICTS
from mixit.study.text import name_width


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
        lines += [f"  {'':<11} left out for --max-hours: {what}" for what in t.get("cut", [])]
    return lines


def raised_budget(record: Mapping[str, Any]) -> bool:
    """Whether a tuning record's budget was raised to another model's: the task's one budget
    (``raised_from``), or the reference's under the rule before it (``reference_steps``)."""
    return "raised_from" in record or "reference_steps" in record


STOPPED_LEGEND = (
    "(stopped: how many of a model's seeds ended at each reason; budget: ran all its steps, "
    "target: reached train.stop_at, plateau: its held-out metric flat over train.plateau of its "
    "budget, or train.patience evaluations without a better one)"
)


READ_AT_BEST = (
    "(each seed is read at its best held-out evaluation, not its last: compare.json's read_at "
    "gives the step; results.csv keeps the last)"
)


def _stops(reasons: Sequence[str]) -> str:
    """``target 2, budget 1``: how many of a model's runs stopped for each reason."""
    counts = {reason: reasons.count(reason) for reason in dict.fromkeys(reasons)}
    return ", ".join(f"{reason} {count}" for reason, count in counts.items())


def format_table(result: Mapping[str, Any]) -> str:
    """A plain-text table: model, trainable parameters, metric mean ± std, seconds per run,
    the mean steps each run trained and why the runs stopped (solved, plateau or budget)."""
    width = name_width(row["model"] for row in result["rows"])
    header = (
        f"{'model':<{width}} {'trainable':>10}  {result['metric']:>22}  {'seconds':>8}  "
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
            f"{row['model']:<{width}} {row['params_trainable']:>10,}  {score:>22}  "
            f"{seconds:>8.1f}  {steps:>7,.0f}  {_stops(row.get('stopped', []))}"
        )
    if result.get("chance") is not None:
        lines.append(f"{'chance':<{width}} {'':>10}  {result['chance']:>22.4f}")
    lines.append(STOPPED_LEGEND)
    beyond = [row["model"] for row in result["rows"] if beyond_paper(row["model"])]
    if beyond:
        lines.append(f"beyond the paper's five: {', '.join(beyond)} (docs/rows.md)")
    if any("read_at" in row for row in result["rows"]):
        lines.append(READ_AT_BEST)
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


def litmus_lines(result: Mapping[str, Any]) -> list[str]:
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
    width = name_width((row["model"] for row in reading["rows"]), least=11)
    for row in reading["rows"]:
        interval = row.get("interval")
        shown = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "-"
        lines.append(
            f"  {row['model']:<{width}} {row['difference']:+.4f} ± "
            f"{spread_text(row.get('spread'))}  {shown:>16}  {VERDICTS[row['matches']]:<12}  "
            f"{row['reading']}"
        )
        lines += [f"  {'':<{width}} {detail}" for detail in row_details(row)]
    if "does_not_discriminate" in reading:
        lines.append(
            f"the random transformer matches: {DOES_NOT_DISCRIMINATE}; "
            f"{reading['does_not_discriminate']}"
        )
    if any(row.get("still_rising") for row in reading["rows"]) and "extension" not in result:
        lines.append(
            "open while runs still rise: --extend doubles every model's budget on every seed "
            f"and judges again (up to {EXTEND_CAP}x the preset's steps; --max-hours bounds it)"
        )
    if len(result.get("seeds", [])) == 1:
        lines.append("(one seed: nothing here is certain; use --seeds 3 or more)")
    return lines


def row_details(row: Mapping[str, Any]) -> list[str]:
    """What a litmus row's verdict rests on besides its numbers: how a model said to fall short
    was trained, and the frozen attention's logit spread at initialisation (Frozen-QK's and the
    random transformer's: near 0, attention is uniform and stays so)."""
    details = []
    if row.get("trained"):
        details.append(f"trained: {row['trained']}")
    if row.get("below_chance"):
        details.append(row["below_chance"])
    if row.get("reference_rising"):
        details.append(
            f"{row['reference_rising']}; this model converged on every seed, so the gap can "
            "only widen"
        )
    if row.get("logit_spread_at_init") is not None:
        details.append(
            "frozen attention's logit spread at initialisation "
            f"{row['logit_spread_at_init']:.3f} (0: uniform)"
        )
    return details


def spread_text(spread: float | None) -> str:
    """A spread over seeds as printed: ``n/a`` from one seed, which measures none."""
    return "n/a" if spread is None else f"{spread:.4f}"
