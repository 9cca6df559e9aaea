"""A suite read beside an earlier suite of the same tasks (``mixit suite --beside EARLIER``).

When the rules a suite trains under change (docs/tuning.md: one budget per task, each model's
own initialisation), its verdicts are worth little without the ones they replace. For each
task both suites hold, and each variant, this gives the earlier verdict as its compare.json
recorded it, today's, and what moved in how the model was trained: its initialisation, its
budget and its rate (the tuning records of both), and why today's verdict is inconclusive
where it is. For example, beside ``results/suite-llama-tuned``::

    | addition | frozen-qk | falls short (-0.918) | matches (-0.004) | init own → small-output |

Nothing is judged again here: ``judge.judged_again`` reads an earlier output under today's
reading rules (docs/reproduce.md's ``suites-rejudged`` block).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from mixit.study.litmus import verdict_words
from mixit.study.text import markdown_table
from mixit.study.words import Verdict

NO_REFERENCE = Verdict.NO_REFERENCE


class BesideRow(TypedDict):
    """One variant on one task, in the earlier suite and in this one (suite.json's ``beside``)."""

    task: str
    model: str
    earlier: str
    now: str
    moved: str


def verdict_text(result: Mapping[str, Any], model: str) -> str:
    """``model``'s litmus verdict on one task as the suite prints it: ``matches (-0.004)``, or
    ``no reference`` when the standard model gave none; ``-`` when the model was not read."""
    reading = result.get("litmus", {})
    if reading.get("no_reference"):
        return NO_REFERENCE
    row = next((r for r in reading.get("rows", []) if r["model"] == model), None)
    if row is None:
        return "-"
    return verdict_words(row)


def moved_text(earlier: Mapping[str, Any], now: Mapping[str, Any], model: str) -> str:
    """What changed in how ``model`` trained between the two suites (its tuning records:
    initialisation, steps, rate), and why today's verdict is inconclusive, if it is."""
    before = earlier.get("tuned", {}).get(model, {})
    after = now.get("tuned", {}).get(model, {})
    changes = []
    if before.get("init") != after.get("init") and after.get("init"):
        changes.append(f"init {before.get('init') or 'preset'} → {after['init']}")
    if before.get("steps") != after.get("steps") and after.get("steps"):
        was = f"{before['steps']:,}" if before.get("steps") else "untuned"
        changes.append(f"steps {was} → {after['steps']:,}")
    if after.get("train.lr") and before.get("train.lr") != after["train.lr"]:
        was = f"{before['train.lr']:.2g}" if before.get("train.lr") else "preset"
        changes.append(f"lr {was} → {after['train.lr']:.2g}")
    row = next((r for r in now.get("litmus", {}).get("rows", []) if r["model"] == model), {})
    if row.get("why"):
        changes.append(f"inconclusive: {row['why']}")
    return "; ".join(changes)


def beside_rows(
    results: Mapping[str, Mapping[str, Any]], earlier: Mapping[str, Mapping[str, Any]]
) -> list[BesideRow]:
    """Every variant of every task both suites hold, then and now."""
    rows = []
    for task, now in results.items():
        if task not in earlier:
            continue
        models = [row["model"] for row in now["rows"] if row["model"] != "standard"]
        for model in models:
            rows.append(
                BesideRow(
                    task=task,
                    model=model,
                    earlier=verdict_text(earlier[task], model),
                    now=verdict_text(now, model),
                    moved=moved_text(earlier[task], now, model),
                )
            )
    return rows


def beside_section(rows: Sequence[BesideRow], folder: Path) -> list[str]:
    """summary.md's section: the earlier and today's verdicts side by side."""
    if not rows:
        return []
    changed = sum(row["earlier"].split(" (")[0] != row["now"].split(" (")[0] for row in rows)
    table = [
        [row["task"], row["model"], row["earlier"], row["now"], row["moved"] or "-"] for row in rows
    ]
    return [
        f"## Beside `{folder}`",
        f"Each verdict as that suite recorded it and as this one reads it ({changed} of "
        f"{len(rows)} changed); moved: what changed in the model's tuning (initialisation, "
        "budget, rate), and why a verdict is inconclusive.",
        markdown_table(["task", "model", "earlier", "now", "moved"], table),
    ]
