"""The litmus reading (the paper's section 5): whether each variant matches the standard
model on a task, from every seed, or why the standard model cannot be the reference."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

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
# A reading's ``matches`` in words, wherever a verdict is printed.
VERDICTS = {True: "matches", False: "falls short", None: "unsure"}


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


def short_of_chance(
    by_seed: Mapping[int, float], chance: float, tolerance: float, higher_is_better: bool = True
) -> str:
    """How a model's seeds fall short of learning a task: the seeds not clearly beyond its
    ``chance`` (``LEARNED_MARGIN`` tolerances), as a phrase; "" when every seed is beyond."""
    better = 1.0 if higher_is_better else -1.0
    bar = chance + better * LEARNED_MARGIN * tolerance
    short = [(s, v) for s, v in by_seed.items() if better * (v - bar) < 0]
    if not short:
        return ""
    listed = ", ".join(f"{v:.3f} (seed {s})" for s, v in short)
    return f"reaches {listed}, not clearly beyond chance {chance:.3f} (the bar: {bar:.3f})"


def reference_problems(result: Mapping[str, Any], tolerance: float) -> list[str]:
    """Why the standard model cannot be the litmus test's reference, [] when it can: a seed
    not clearly beyond the task's chance (``LEARNED_MARGIN`` tolerances), another variant
    better by more than the tolerance, or seeds whose standard deviation exceeds it."""
    rows = {row["model"]: row for row in result["rows"]}
    values = rows["standard"]["values"]
    better = _sign(result)
    problems = []
    if result.get("chance") is not None:
        seeds = result.get("seeds", range(len(values)))
        by_seed = dict(zip(seeds, values, strict=True))
        short = short_of_chance(by_seed, result["chance"], tolerance, better > 0)
        if short:
            problems.append(f"standard {short}")
    for model, row in rows.items():
        ahead = better * (row["mean"] - rows["standard"]["mean"])
        if ahead > tolerance + ROUNDING:
            problems.append(f"{model} beats standard by {ahead:.3f}")
    # Their standard deviation, not their range: the range of ten seeds exceeds that of three
    # from the same spread, and would refuse a reference for having been measured more.
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    if spread > tolerance + ROUNDING:
        problems.append(
            f"standard's seeds disagree: standard deviation {spread:.3f} "
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
    for row in reading["rows"]:
        interval = row.get("interval")
        shown = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "-"
        lines.append(
            f"  {row['model']:<11} {row['difference']:+.4f} ± {row.get('spread', 0.0):.4f}  "
            f"{shown:>16}  {VERDICTS[row['matches']]:<11}  {row['reading']}"
        )
    if len(result.get("seeds", [])) == 1:
        lines.append("(one seed: nothing here is certain; use --seeds 3 or more)")
    return lines
