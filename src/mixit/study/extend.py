"""Spend where a reading is open (``--extend``, the reading rules of 2026-12-06): after the
verdict runs, a litmus reading left open by a run still rising (a variant that may catch up, a
reference that may pull away) doubles the budget of the whole family, every model on every
verdict seed, at the rates the tuning chose, and the comparison is judged again; this repeats
while a reading stays open, up to ``EXTEND_CAP`` times the preset's steps or ``max_hours`` of
training, whichever comes first. Each doubling is recorded (``compare.json``'s ``extension``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from mixit.config.overrides import Setting
from mixit.config.schema import RunConfig
from mixit.study.comparison import ComparisonResult, Doubling, Extension, LitmusResult
from mixit.study.text import duration

# How far the verdict runs may train, in the preset's steps: four doublings past the tuning's
# own cap of 4x (``tuning.rules.BUDGET_CAP``). At tiny the slowest learners the reading rules
# left open needed more than 4x (C8's random transformer at depth 16: 0.21 -> 0.56 -> 0.83 over
# its last doublings), and 16x of a tiny budget is still minutes to an hour on a laptop.
EXTEND_CAP = 16
# Why the doublings stopped with a reading still open, when it was --max-hours: the next
# command (cli.compare.next_step) extends again without it.
MAX_HOURS = "max_hours"


def open_by_rising(litmus: LitmusResult) -> list[str]:
    """The models whose reading a run still rising left open (``still_rising`` in the row)."""
    return [row["model"] for row in litmus.get("rows", []) if row.get("still_rising")]


Judge = Callable[[Mapping[str, Mapping[str, Setting]], Extension], ComparisonResult]


def extend(
    result: ComparisonResult,
    configs: Mapping[tuple[str, int], RunConfig],
    preset_steps: int,
    judge: Judge,
    max_hours: float | None = None,
) -> ComparisonResult:
    """``result`` judged again after each doubling of the family's budget, while a run still
    rising leaves a reading open: ``judge(per_model_overrides, extension)`` trains the
    comparison at the settings given and returns its result. The budget is the largest any
    verdict run trained to (one budget per task); the doublings stop at ``EXTEND_CAP`` times
    ``preset_steps``, or when the next one, priced at twice the last one's measured time,
    would pass ``max_hours`` of training since the first."""
    steps = max(config.train.steps for config in configs.values())
    cap = EXTEND_CAP * preset_steps
    record: Extension = {"steps": steps, "cap": cap, "doublings": [], "stopped": "decided"}
    record["open"] = open_by_rising(result["litmus"])
    started, last = time.monotonic(), 0.0
    while record["open"]:
        if 2 * steps > cap:
            record["stopped"] = "cap"
            break
        spent = time.monotonic() - started
        if max_hours is not None and spent + 2 * last > max_hours * 3600:
            record["stopped"] = MAX_HOURS
            break
        models = {model for model, _ in configs}
        per_model = {model: {"train.steps": 2 * steps} for model in models}
        began = time.monotonic()
        result = judge(per_model, record | {"steps": 2 * steps})
        last = time.monotonic() - began
        seconds = sum(row["train_seconds"] * len(row["values"]) for row in result["rows"])
        doubling: Doubling = {"steps": steps, "to": 2 * steps, "open": record["open"],
                              "train_seconds": seconds}  # fmt: skip
        steps = 2 * steps
        record["doublings"].append(doubling)
        record |= {"steps": steps, "open": open_by_rising(result["litmus"])}
    if record["doublings"] or record["open"]:
        result["extension"] = record
    return result


def extension_lines(result: ComparisonResult) -> list[str]:
    """The console's account of ``--extend``: each doubling, and what stayed open and why."""
    record = result.get("extension")
    if not record:
        return []
    lines = [
        f"extended: {d['steps']:,} -> {d['to']:,} steps for {', '.join(d['open'])} "
        f"({d['train_seconds']:,.0f} s of training)"
        for d in record["doublings"]
    ]
    if record["open"]:
        why = {"cap": f"the cap of {record['cap']:,} steps", MAX_HOURS: "--max-hours"}
        lines.append(
            f"still open after {record['steps']:,} steps ({why[record['stopped']]}): "
            f"{', '.join(record['open'])}"
        )
    return lines


def extension_estimate_line(steps: int, cap: int, first_seconds: float) -> str:
    """What ``--extend`` adds to an estimate: its first doubling (every model on every seed
    again at twice ``steps``, priced at ``first_seconds`` of training) and, each doubling
    costing twice the last, every doubling up to ``cap`` steps."""
    budgets = []
    while 2 * (budgets[-1] if budgets else steps) <= cap:
        budgets.append(2 * (budgets[-1] if budgets else steps))
    if not budgets:
        return f"--extend adds nothing: {steps:,} steps leave no doubling under its cap ({cap:,})"
    most = first_seconds * (2 ** len(budgets) - 1)
    return (
        f"plus --extend, where a run still rising leaves a reading open: every model on every "
        f"seed again at {budgets[0]:,} steps, up to about {duration(first_seconds)} of training; "
        f"each further doubling twice the last, up to {budgets[-1]:,} steps (the cap, "
        f"{EXTEND_CAP}x the preset's): at most {duration(most)} in all (--max-hours H bounds it)"
    )
