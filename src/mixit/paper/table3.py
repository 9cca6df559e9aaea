"""Table 3: tasks that need no in-context circuit (algorithmic, memorization, sentiment); C5."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.paper.beyond import (
    column,
    plan_beyond,
    reading,
    reading_lines,
    trained_beyond,
    tuning_records,
    with_beyond,
)
from mixit.paper.claims import judged, margin, paired, per_seed
from mixit.study.claim import (
    Claim,
)
from mixit.study.experiment import (
    Experiment,
    Headline,
    Overrides,
    Report,
    Run,
    Summaries,
    against_standard,
    runs,
    settings_note,
)
from mixit.study.measures import by_model, mean, mean_std, percent, seeds_note
from mixit.study.text import markdown_table, points_from_paper

MODELS = ("standard", "frozen-qk", "mixit")
TASKS = ("addition", "dyck", "modular-addition", "memorization", "sentiment")
C5_TASKS = ("addition", "dyck", "modular-addition", "sentiment")
PAPER = {  # Table 3, test accuracy (memorization: on the memorized set; sentiment: Yelp)
    "addition": {"standard": 0.9858, "frozen-qk": 1.0, "mixit": 1.0},
    "dyck": {"standard": 0.9580, "frozen-qk": 0.9738, "mixit": 0.9617},
    "modular-addition": {"standard": 1.0, "frozen-qk": 1.0, "mixit": 1.0},
    "memorization": {"standard": 1.0, "frozen-qk": 1.0, "mixit": 1.0},
    "sentiment": {"standard": 0.9055, "frozen-qk": 0.9086, "mixit": 0.9256},
}


def plan(scale: str, seeds: range) -> list[Run]:
    return [run for task in TASKS for run in runs(task, MODELS, seeds, scale)]


def beyond(scale: str, seeds: range) -> list[Run]:
    """Frozen-MLP on each task, past the paper's rows (``mixit.paper.beyond``)."""
    return [run for task in TASKS for run in plan_beyond(task, seeds, scale)]


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C5: on each of its tasks MixiT is within the claim's margin of standard."""
    gap = results["mixit_minus_standard"]
    accuracy = results["accuracy"]
    readings = {
        task: per_seed(paired(accuracy[task]["mixit"], accuracy[task]["standard"]), -margin("C5"))
        for task in gap
    }
    verdict = judged("C5", readings, {"mixit_minus_standard": gap})
    verdict.failing = [task for task, reading in readings.items() if reading is False]
    return [verdict]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    extra = trained_beyond(summaries, beyond(scale, seeds))
    shown = (*MODELS, *extra)
    planned = {task: runs(task, shown, seeds, scale) for task in TASKS}
    accuracy = {task: by_model(summaries, planned[task], "test_accuracy") for task in TASKS}
    rows = []
    for task in TASKS:
        paper = PAPER[task]
        cells = (
            f"{percent(paper[m]) if m in paper else '-'} / {mean_std(accuracy[task][m])}"
            for m in shown
        )
        rows.append([task, *cells])
        gaps = (points_from_paper(mean(accuracy[task][m]), paper[m]) for m in MODELS)
        rows.append([f"{task}: ours against the paper", *gaps, *("-" for _ in extra)])
    gap = {t: mean(accuracy[t]["mixit"]) - mean(accuracy[t]["standard"]) for t in C5_TASKS}
    every = [run for task in TASKS for run in planned[task]]
    tuned = tuning_records(every, summaries, scale, out.parent) if extra else {}
    read = {task: reading(task, summaries, planned[task], seeds, tuned) for task in TASKS if extra}
    markdown = "\n\n".join(
        [
            "Test accuracy, paper / ours. Memorization is scored on the pairs it memorized and "
            "uses the tiny memorization preset of Table 4 (not saturated, unlike the paper's "
            "Table 3 column); sentiment is Rotten Tomatoes offline, Yelp in the paper. "
            + settings_note(scale, TASKS)
            + seeds_note(seeds),
            markdown_table(["task", *map(column, shown)], rows),
            "MixiT minus standard: " + ", ".join(f"{t} {v:+.3f}" for t, v in gap.items()),
            *reading_lines(read),
        ]
    )
    results = with_beyond({"accuracy": accuracy, "mixit_minus_standard": gap}, read)
    return Report(markdown, results, judge(results))


def headlines(scale: str, seeds: range) -> dict[str, list[Headline]]:
    """C5 turns on MixiT's accuracy on each of its tasks, read against the standard model's."""
    return {"C5": [against_standard(task, task, seeds, scale) for task in C5_TASKS]}


EXPERIMENT = Experiment(
    "table3",
    "Table 3: algorithmic tasks, memorization, sentiment",
    plan,
    report,
    judge,
    headlines=headlines,
    beyond=beyond,
)
