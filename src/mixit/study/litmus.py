"""The litmus reading (the paper's section 5): whether each variant matches the standard
model on a task, from every seed, or why the standard model cannot be the reference.

Three readings (docs/reproduce.md, "Reading rules"): ``matches``, ``falls short`` and
``inconclusive``. A variant falls short only when every seed, and the 95 % interval of the
paired differences, is beyond the tolerance, and it was trained to the end: not cut off still
rising (``capped`` in its tuning record, or a verdict seed still rising at its budget's end;
neither where every verdict seed ended at the metric's ceiling).
A metric with no ceiling (log perplexity) is read at the one budget every model trained
instead, and is inconclusive only when the order of the variant and the reference changed over
the last doubling. When even the random
transformer matches, the task does not tell the models apart at this size.

What a run still rising blocks (rule of 2026-12-06): a variant still rising blocks "falls
short" (it may catch up), not "matches"; a reference still rising blocks "matches" (it may pull
away), not "falls short" against a variant that converged on every seed, where the gap can only
widen (the row says so, ``reference_rising``)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mixit.common.io import JSONObject
from mixit.models.variants import variant_named
from mixit.study.comparison import LitmusResult
from mixit.study.words import READINGS
from mixit.tasks import get_task
from mixit.tasks.base import harder

# What counts as having learned is the tuning protocol's too, so its rules hold the tolerance;
# the reading re-exports it under the name every reader imports.
from mixit.tuning.rules import DEFAULT_TOLERANCE as DEFAULT_TOLERANCE
from mixit.tuning.rules import near_ceiling, short_of_chance

# Two-sided 95 % quantiles of Student's t for 1..30 degrees of freedom; the normal's beyond.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
# Metrics that differ by exactly the tolerance count as within it, whatever float subtraction
# leaves in the last bits.
ROUNDING = 1e-9
STRADDLES = "its seeds fall on both sides of the tolerance"
CROSSES = "the 95 % interval of its paired differences crosses the tolerance"
# A reading's ``matches`` in words, wherever a verdict is printed (``mixit.study.words``).
VERDICTS = READINGS
DOES_NOT_DISCRIMINATE = "this task does not tell the models apart at this size"
# Metrics that keep improving with training (no ceiling): read at one budget for every model.
NO_CEILING = ("log_ppl",)
# `--seeds auto` (docs/reproduce.md, "Reading rules"): start with this many seeds and add one
# at a time while a verdict is inconclusive by its interval alone, up to the maximum. Written
# before any run it decides.
AUTO = "auto"
AUTO_SEEDS = (3, 6)


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
    not clearly beyond the task's chance (``LEARNED_MARGIN`` tolerances), or another variant
    better by more than the tolerance."""
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
    # Seeds of the reference that disagree refuse nothing: the reading is paired per seed,
    # so the reference's own spread does not enter it.
    return problems


@dataclass
class LitmusReading:
    """One variant read against the reference, seed by seed: the mean ``difference``, its
    ``spread`` and 95 % ``interval`` (None for one seed), ``matches`` (True, False, or None:
    inconclusive, ``why`` says which way) and the ``reading`` in words; for a shortfall, how
    the variant was ``trained``; for frozen attention, its logit spread at initialisation."""

    model: str
    difference: float
    spread: float | None
    interval: tuple[float, float] | None
    matches: bool | None
    reading: str
    why: str = ""
    trained: str = ""
    logit_spread_at_init: float | None = None
    # A shortfall read against a reference still rising (it converged, the reference did not):
    # the gap can only widen. Said beside the verdict, which it does not change.
    reference_rising: str = ""
    # Inconclusive because a run was still rising: more steps can decide it (``--extend``).
    still_rising: bool = False
    # A mean more than the tolerance below the task's chance, and what chance is there.
    below_chance: str = ""

    def to_json(self) -> JSONObject:
        """As compare.json's ``litmus.rows`` hold it: ``why``, ``trained`` and the logit
        spread only where they say something."""
        written: JSONObject = {
            "model": self.model,
            "difference": self.difference,
            "spread": self.spread,
            "interval": self.interval,
            "matches": self.matches,
            "reading": self.reading,
        }
        if self.matches is None:
            written["why"] = self.why
        if self.trained:
            written["trained"] = self.trained
        if self.logit_spread_at_init is not None:
            written["logit_spread_at_init"] = self.logit_spread_at_init
        if self.reference_rising:
            written["reference_rising"] = self.reference_rising
        if self.still_rising:
            written["still_rising"] = True
        if self.below_chance:
            written["below_chance"] = self.below_chance
        return written


def litmus(result: Mapping[str, Any], tolerance: float) -> list[LitmusReading]:
    """Each variant against the standard model, seed by seed on the same data: the mean
    difference, its spread and 95 % interval, and the verdict: ``matches`` True, False, or
    None (inconclusive, ``why`` says which way), with the reading in words. [] without a
    standard row."""
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
        interval = interval_95(paired)
        matches, why = _verdict([better * d for d in paired], interval, better, tolerance)
        still_rising = False
        if matches is not True and (unfinished := _unfinished(result, model, tolerance)):
            # A variant still rising may catch up, or settle on one side of the tolerance: an
            # open reading names that beside what left it open, and more steps can decide it.
            why = unfinished if matches is False else f"{why}; {unfinished}"
            matches, still_rising = None, result["metric"] not in NO_CEILING
        # A reference still rising may pull away from a match, or move an open reading, but
        # only widens a shortfall of a variant that converged on every seed (checked above).
        reference_rising = "" if still_rising else _unfinished(result, "standard", tolerance)
        if matches is not False and reference_rising:
            pulls = f"{reference_rising}: it may pull away"
            why = pulls if matches is True else f"{why}; {pulls}"
            matches, still_rising = None, True
        readings.append(
            LitmusReading(
                model,
                difference=row["mean"] - rows["standard"]["mean"],
                spread=statistics.stdev(paired) if len(paired) > 1 else None,
                interval=interval,
                matches=matches,
                reading=why
                if matches is None
                else _reading(model, matches, len(reference), tuned_alike(result, model)),
                why=why if matches is None else "",
                trained=_training(result, model) if matches is False else "",
                logit_spread_at_init=row.get("logit_spread_at_init"),
                reference_rising=reference_rising if matches is False else "",
                still_rising=still_rising,
                below_chance=_below_chance(result, row, tolerance),
            )
        )
    return readings


def _verdict(
    worse: Sequence[float],
    interval: tuple[float, float] | None,
    better: float,
    tolerance: float,
) -> tuple[bool | None, str]:
    """From the paired differences in the better direction (negative: the variant is
    worse): True when every seed and the interval are within the tolerance, False when every
    seed and the interval are beyond it, None (with why) otherwise."""
    within = {d >= -tolerance - ROUNDING for d in worse}
    if len(within) > 1:
        return None, STRADDLES
    matches = within.pop()
    if interval is not None:
        low, high = sorted(better * x for x in interval)
        crosses = low < -tolerance - ROUNDING if matches else high >= -tolerance - ROUNDING
        if crosses:
            return None, CROSSES
    return matches, ""


def _unfinished(result: Mapping[str, Any], model: str, tolerance: float) -> str:
    """Why ``model``'s runs were not trained to the end, "" when they were: its tuning record
    reached the budget cap still rising, or a verdict seed was still rising at its budget's
    end; for a metric with no ceiling, instead, the order of the variant and the reference
    changed over the last doubling. Verdict seeds that all ended within the tolerance of the
    metric's ceiling were trained to the end, whatever the tuning seed did (#101)."""
    rows = {row["model"]: row for row in result["rows"]}
    record = result.get("tuned", {}).get(model, {})
    if result["metric"] in NO_CEILING:
        return _order_changed(result, model) if model != "standard" else ""
    # The verdict runs trained past the tuning's cap (``--extend``): their own rise decides.
    beyond = result.get("extension", {}).get("steps", 0) > record.get("steps", 0)
    values = rows[model].get("values", [rows[model]["mean"]])
    if all(near_ceiling(v, result["metric"], tolerance + ROUNDING) for v in values):
        return ""
    if record.get("capped") and not beyond:
        return f"{_name(model)} reached the budget cap ({record['steps']:,} steps) still rising"
    seeds = result.get("seeds", [])
    rising = [s for s, up in zip(seeds, rows[model].get("rising", []), strict=False) if up]
    if rising:
        listed = ", ".join(str(s) for s in rising)
        return f"{_name(model)} was still rising at its budget's end (seed {listed})"
    return ""


def _order_changed(result: Mapping[str, Any], model: str) -> str:
    """For a metric with no ceiling: "" unless the variant and the reference swapped places
    between the last two budgets of their tuning (the tuning seed's validation)."""
    tuned = result.get("tuned", {})
    budgets = [tuned.get(m, {}).get("budgets", []) for m in (model, "standard")]
    scores = [{b["steps"]: b["score"] for b in tried if "score" in b} for tried in budgets]
    shared = sorted(set(scores[0]) & set(scores[1]))
    if len(shared) < 2:
        return ""
    before, after = ((scores[0][s] - scores[1][s]) * _sign(result) for s in shared[-2:])
    if (before > 0) == (after > 0):
        return ""
    return (
        f"its order against the reference changed between {shared[-2]:,} and {shared[-1]:,} steps"
    )


def _training(result: Mapping[str, Any], model: str) -> str:
    """How a model said to fall short was trained: its budget, whether it converged, its
    initialisation and where its rate sits on the grid ("" untuned)."""
    record = result.get("tuned", {}).get(model)
    if not record:
        return ""
    init = record.get("init") or "its preset's"
    rate = {"interior": "interior", "extended": "interior"}.get(record["edge"], record["edge"])
    ended = "every model's budget" if result["metric"] in NO_CEILING else "converged"
    return (
        f"{record['steps']:,} steps, {ended}, initialisation {init}, "
        f"rate {record['train.lr']:.3g} ({rate} of the grid)"
    )


def _below_chance(result: Mapping[str, Any], row: Mapping[str, Any], tolerance: float) -> str:
    """Where a model's mean is more than the tolerance worse than the task's chance, the words
    for it: chance, what it is on this task (``TaskSpec.chance_means``), and that the model
    does worse than a guess that ignores its input; "" otherwise."""
    chance = result.get("chance")
    if chance is None or _sign(result) * (row["mean"] - chance) >= -tolerance:
        return ""
    means = get_task(result["task"]).chance_means if "task" in result else "its chance level"
    return (
        f"{row['mean']:.3f} is below chance {chance:.3f} ({means}): worse than a guess that "
        "ignores the input, so its relative score is negative"
    )


# Fewer seeds than this carry no sentence on which component a task needs (a variant's
# ``if_matches`` / ``if_short``): one seed's gap may be its draw, and the reading has no interval.
MECHANISM_SEEDS = 3


def _reading(model: str, matches: bool, seeds: int, tuned: bool) -> str:
    """What a verdict says: with ``MECHANISM_SEEDS`` or more, each model tuned (``tuned``),
    what the task needs (the variant's sentence); otherwise only what was compared, and what
    would carry the sentence."""
    variant = variant_named(model)
    if seeds >= MECHANISM_SEEDS and tuned:
        return variant.if_matches if matches else variant.if_short
    compared = "reaches the reference" if matches else "falls short of the reference"
    if seeds < MECHANISM_SEEDS:
        return (
            f"{model} {compared} on {seeds} seed{'s' * (seeds > 1)}: too few to say which "
            f"component the task needs (--seeds {MECHANISM_SEEDS} or more)"
        )
    # An untuned model may fall short only at a rate that suits the reference (docs/tuning.md).
    return (
        f"{model} {compared} on {seeds} seeds at the preset's settings: to say which component "
        "the task needs, tune each model first (--tune lr)"
    )


def tuned_alike(result: Mapping[str, Any], model: str) -> bool:
    """Whether ``model`` and the reference were both tuned under the protocol."""
    tuned = result.get("tuned", {})
    return bool(tuned.get(model)) and bool(tuned.get("standard"))


def _name(model: str) -> str:
    return "the reference" if model == "standard" else model


def reading(result: Mapping[str, Any], tolerance: float, steps: int) -> LitmusResult:
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
    readings = litmus(result, tolerance)
    rows = [row.to_json() for row in readings]
    random = next((row for row in readings if row.model == "random"), None)
    if random is None or random.matches is not True:
        return {"tolerance": tolerance, "rows": rows}
    # Even the weakest model matches: no sentence about what the task needs holds.
    for row in rows:
        row["reading"] = DOES_NOT_DISCRIMINATE if row["matches"] is not None else row["reading"]
    harder_task = ""
    if "task" in result:
        spec = get_task(result["task"])
        generated = spec.synthetic or result.get("overrides", {}).get("task.generator")
        axis = spec.axis if generated else None
        walk = f"; `mixit compare --axis auto` doubles {axis} until they part" if axis else ""
        if spec.synthetic:
            harder_task = f"{harder(result['task'])}{walk}"
        elif generated:  # a generator's one knob is its size; the task's others are not its
            harder_task = f"make it harder: a larger task.size (the generator's knob){walk}"
        else:  # a task from files has no setting that makes its examples harder
            harder_task = FROM_FILES
    return {"tolerance": tolerance, "rows": rows, "does_not_discriminate": harder_task}


# What makes a file task harder is in its examples: these are the levers the synthetic tasks
# measure (retrieval's pairs and vocabulary, MQAR's keys, the marker tasks' lengths).
FROM_FILES = (
    "its examples come from its files: write harder ones (longer inputs, more distinct symbols, "
    "more distractors between a cue and what it points to), then `--axis "
    "task.data_files=easy/train.jsonl,easy/test.jsonl,hard/train.jsonl,hard/test.jsonl` "
    "finds where the models part"
)


def verdict_words(row: Mapping[str, Any]) -> str:
    """A litmus row's verdict with its mean difference, as summaries print it:
    ``falls short (-0.918)``."""
    return f"{VERDICTS[row['matches']]} ({row['difference']:+.3f})"


def undecided_by_interval(reading: Mapping[str, Any]) -> list[str]:
    """The models whose verdict in ``reading`` (compare.json's ``litmus``) is inconclusive
    only because the interval crosses the tolerance: those more seeds can decide."""
    return [row["model"] for row in reading.get("rows", []) if row.get("why") == CROSSES]
