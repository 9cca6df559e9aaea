"""Table 5: MixiT accuracy against the number of heads at fixed width; claim C7."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.plots import ACCURACY_BOUNDS, line_plot
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
    runs,
)
from mixit.study.measures import mean, mean_std, metric_values, percent, seeds_note
from mixit.study.text import markdown_table, points_from_paper, ran
from mixit.tasks.base import harder

TASKS = ("addition", "dyck", "sentiment")
# Head counts the width allows (the tiny models are 64 or 128 wide, so 64 heads stand in for
# the paper's 256). Tiny keeps the two ends C7 compares, for time.
HEADS = {"tiny": (4, 64), "small": (4, 16, 64), "paper": (4, 16, 64, 256)}
PAPER = {  # Table 5, width 512 (addition, Dyck-1) and 1024 (Yelp)
    "addition": {4: 0.3471, 16: 0.3470, 64: 0.5072, 256: 0.9187},
    "dyck": {4: 0.7793, 16: 0.8168, 64: 0.8938, 256: 0.9183},
    "sentiment": {4: 0.9252, 16: 0.9256, 64: 0.9248, 256: 0.9172},
}
# The tiny presets use sigma = 1/sqrt(m) for W^M, identical for every head, so more heads only
# means narrower heads. The authors' code spreads sigma across heads (`per-head-spread`):
# there, more heads give the MLPs more distinct mixing patterns to choose from, which is
# Table 5's argument (docs/presets.md).
SPREAD = {"model.mixing_scale": "per-head-spread"}
# Tiny also trains fewer steps, where the head counts' accuracies stand as far apart as at the
# full budget: Dyck-1 a third of the preset, addition 600 of its 900 (docs/reproduce.md).
TINY_STEPS = {
    "addition": {"train.steps": 600},
    "dyck": {"train.steps": 300, "train.eval_every": 100},
    "sentiment": {},
}
SETTINGS = {
    "tiny": {t: {**SPREAD, **TINY_STEPS[t]} for t in TASKS},
    "small": {t: SPREAD for t in TASKS},
    "paper": {t: {} for t in TASKS},
}
C7_TASKS = ("addition", "dyck")
# C7 is judged on the spread, Table 5's construction in the authors' code. Table 3's MixiT
# (the presets' one sigma for every head) is trained beside it on C7's tasks as a diagnostic,
# at the fewest and most heads, at table 5's budget: at tiny, 4 spread heads learn addition far
# worse than table 3's MixiT does (docs/reproduce.md), so the gain C7 reads may be the low
# end's collapse rather than the heads' help; the report shows both.
# Both scales build the tiny presets, whose MixiT draws W^M with 1/sqrt(m) for every head.
SAME_SIGMA = {"model.mixing_scale": "sequence"}
TABLE3_SETTINGS = {
    scale: {t: {**SAME_SIGMA, **(TINY_STEPS[t] if scale == "tiny" else {})} for t in C7_TASKS}
    for scale in ("tiny", "small")
}


def _runs(scale: str, task: str, heads: int, seeds: range) -> list[Run]:
    overrides = {"model.n_head": heads, **SETTINGS[scale][task]}
    return runs(task, ["mixit"], seeds, scale, overrides)


def _table3_runs(scale: str, task: str, heads: int, seeds: range) -> list[Run]:
    overrides = {"model.n_head": heads, **TABLE3_SETTINGS[scale][task]}
    return runs(task, ["mixit"], seeds, scale, overrides)


def _ends(scale: str) -> tuple[int, int]:
    return HEADS[scale][0], HEADS[scale][-1]


def plan(scale: str, seeds: range) -> list[Run]:
    spread = [run for t in TASKS for h in HEADS[scale] for run in _runs(scale, t, h, seeds)]
    if scale not in TABLE3_SETTINGS:
        return spread
    same_sigma = [
        run for t in C7_TASKS for h in _ends(scale) for run in _table3_runs(scale, t, h, seeds)
    ]
    return spread + [run for run in same_sigma if run not in spread]


def at_the_ceiling(fewest: list[float], gain: float) -> bool:
    """Whether the fewest heads leave less room below accuracy 1.0 than the gain C7 asks for on
    every seed: the task then cannot show the heads' help at this scale (it does not
    discriminate), whatever the most heads reach."""
    return all(1.0 - value < gain for value in fewest)


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C7: on addition and Dyck-1 the most heads beat the fewest by the claim's margin; a task
    whose fewest heads sit at the ceiling on every seed (``at_the_ceiling``) does not
    discriminate at this scale, which leaves its comparison undecided and names what would
    make the task harder."""
    accuracy = results["accuracy"]  # {task: [[accuracy per seed] per number of heads]}
    gain = margin("C7")
    readings, ceiling = {}, {}
    for t in C7_TASKS:
        name = f"{t}: most heads - fewest >= {gain:.2f}"
        if at_the_ceiling(accuracy[t][0], gain):
            readings[name] = None
            ceiling[t] = f"does not discriminate at this scale; {harder(t)}"
        else:
            readings[name] = per_seed(paired(accuracy[t][-1], accuracy[t][0]), gain)
    measured: dict[str, Any] = {"gain": results["gain"]}
    if ceiling:
        measured["at_the_ceiling"] = ceiling
    verdict = judged("C7", readings, measured)
    verdict.failing = [
        t for t, reading in zip(C7_TASKS, readings.values(), strict=True) if reading is False
    ]
    return [verdict]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    heads = HEADS[scale]
    accuracy = {
        t: [metric_values(summaries, _runs(scale, t, h, seeds), "test_accuracy") for h in heads]
        for t in TASKS
    }
    line_plot(
        out / "table5.png",
        heads,
        accuracy,
        f"MixiT accuracy against heads ({ran(scale, seeds)})",
        "number of heads (fixed width)",
        "test accuracy",
        bounds=ACCURACY_BOUNDS,
        log_x=True,
    )
    rows = [
        [
            t,
            *(
                f"{percent(PAPER[t][h]) if h in PAPER[t] else '-'} / {mean_std(v)}"
                for h, v in zip(heads, accuracy[t], strict=True)
            ),
        ]
        for t in TASKS
    ] + [
        [
            f"{t}: ours against the paper",
            *(
                points_from_paper(mean(v), PAPER[t][h]) if h in PAPER[t] else "-"
                for h, v in zip(heads, accuracy[t], strict=True)
            ),
        ]
        for t in TASKS
    ]
    gain = {t: mean(accuracy[t][-1]) - mean(accuracy[t][0]) for t in TASKS}
    settings = ", ".join(f"{t}: {o}" for t, o in SETTINGS[scale].items() if o)
    parts = [
        "MixiT test accuracy, paper / ours, by number of heads. "
        + (f"Settings at this scale: {settings}. " if settings else "")
        + seeds_note(seeds),
        markdown_table(["task", *map(str, heads)], rows),
        "Most minus fewest heads: " + ", ".join(f"{t} {g:+.3f}" for t, g in gain.items()),
        "![table 5](table5.png)",
    ]
    results = {"heads": list(heads), "accuracy": accuracy, "gain": gain}
    if scale in TABLE3_SETTINGS:
        same_sigma = {
            t: [
                metric_values(summaries, _table3_runs(scale, t, h, seeds), "test_accuracy")
                for h in _ends(scale)
            ]
            for t in C7_TASKS
        }
        results["table3_construction"] = same_sigma
        parts.append(table3_note(scale, same_sigma))
    return Report("\n\n".join(parts), results, judge(results))


def table3_note(scale: str, same_sigma: Mapping[str, Any]) -> str:
    """The diagnostic: table 3's MixiT (one sigma for every head) at the fewest and most
    heads, beside the spread C7 is judged on."""
    fewest, most = _ends(scale)
    rows = [[t, mean_std(v[0]), mean_std(v[1]), f"{mean(v[1]) - mean(v[0]):+.3f}"]
            for t, v in same_sigma.items()]  # fmt: skip
    return "\n\n".join(
        [
            "Why C7 is not judged on table 3's MixiT: with one sigma for every head (the "
            "presets' `model.mixing_scale`), more heads at a fixed width only narrow each "
            "head, so the table would measure narrowness, not the mixing patterns Table 5 is "
            "about; the authors' code spreads sigma across heads. Table 3's MixiT at the "
            "same head counts, as a diagnostic (not judged):",
            markdown_table(["task", f"{fewest} heads", f"{most} heads", "gain"], rows),
        ]
    )


def headlines(scale: str, seeds: range) -> dict[str, list[Headline]]:
    """C7 turns on MixiT's accuracy with the most heads on each of its tasks, in the spread
    runs it is judged on (not the diagnostic at table 3's one sigma)."""
    most = HEADS[scale][-1]
    return {
        "C7": [
            Headline(f"{task}, {most} heads", tuple(_runs(scale, task, most, seeds)))
            for task in C7_TASKS
        ]
    }


EXPERIMENT = Experiment("table5", "Table 5: MixiT heads", plan, report, judge, headlines=headlines)
