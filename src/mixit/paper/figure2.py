"""Figure 2: retrieval accuracy against the largest number of key-value pairs; claim C3."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.io import JSONObject
from mixit.common.plots import ACCURACY_BOUNDS, line_plot
from mixit.paper.claims import judged, paired, per_seed
from mixit.study.axis import point_from_runs
from mixit.study.claim import (
    Claim,
)
from mixit.study.experiment import (
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
    runs,
)
from mixit.study.measures import mean, mean_std, seeds_note
from mixit.study.text import markdown_table, ran
from mixit.tasks import get_task

MODELS = ("standard", "frozen-mlp", "frozen-qk", "mixit")
# Retrieval's default axis (`compare --task retrieval --axis default`) at each scale.
PAIRS = get_task("retrieval").axis_values


def _runs(scale: str, pairs: int, seeds: range) -> list[Run]:
    return runs("retrieval", MODELS, seeds, scale, {"task.max_pairs": pairs})


def plan(scale: str, seeds: range) -> list[Run]:
    return [run for pairs in PAIRS[scale] for run in _runs(scale, pairs, seeds)]


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C3: MixiT's accuracy drops most from the fewest to the most pairs."""
    accuracy = results["accuracy"]
    drops = {m: paired(accuracy[m][0], accuracy[m][-1]) for m in MODELS}
    readings = {
        f"mixit's drop > {m}'s": per_seed(paired(drops["mixit"], drops[m]), strict=True)
        for m in MODELS[:3]
    }
    return [judged("C3", readings, {"drop": results["drop"]})]


def _point(summaries: Summaries, selected: list[Run], seeds: range) -> JSONObject:
    """One value of the axis as `compare --axis` reads it (``axis.point_from_runs``)."""
    by_model: dict[str, list[Any]] = {}
    for run in selected:
        by_model.setdefault(run.model, []).append(summaries[run])
    return point_from_runs("retrieval", seeds, by_model)


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    pairs = PAIRS[scale]
    points = {p: _point(summaries, _runs(scale, p, seeds), seeds) for p in pairs}
    accuracy = {p: {r["model"]: r["values"] for r in points[p]["rows"]} for p in pairs}
    series = {m: [accuracy[p][m] for p in pairs] for m in MODELS}
    line_plot(
        out / "figure2.png",
        pairs,
        series,
        f"Retrieval accuracy vs number of pairs ({ran(scale, seeds)})",
        "largest number of key-value pairs m_max",
        "test accuracy",
        bounds=ACCURACY_BOUNDS,
    )
    drop = {m: mean(series[m][0]) - mean(series[m][-1]) for m in MODELS}
    rows = [[p, *(mean_std(accuracy[p][m]) for m in MODELS)] for p in pairs]
    markdown = "\n\n".join(
        [
            "Test accuracy by m_max. " + seeds_note(seeds),
            markdown_table(["m_max", *MODELS], rows),
            "Drop from the fewest to the most pairs: "
            + ", ".join(f"{m} {drop[m]:+.3f}" for m in MODELS),
            "![figure 2](figure2.png)",
        ]
    )
    results = {"pairs": list(pairs), "accuracy": {m: series[m] for m in MODELS}, "drop": drop}
    return Report(markdown, results, judge(results))


EXPERIMENT = Experiment(
    "figure2", "Figure 2: retrieval accuracy against m_max", plan, report, judge
)
