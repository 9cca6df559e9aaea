"""Table 6: decimal addition at depth 2, 8, 16 for MixiT and the random transformer; C8."""

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

# Each series: the variant and its own settings. C8 is judged on `mixit`, MixiT as the paper
# and the authors' code build it (shaped residual, lam = sqrt(1/2)); `mixit-plain-residual`
# drops that residual and is reported beside it, because at tiny width the shaped one learned
# nothing at depth 16 in the tiny budget while the plain one solved it (docs/reproduce.md).
SERIES = ("mixit", "mixit-plain-residual", "random")
VARIANT = {"mixit": "mixit", "mixit-plain-residual": "mixit", "random": "random"}
DEPTHS = (2, 8, 16)
PAPER = {"mixit": (1.0, 1.0, 1.0), "random": (1.0, 0.2353, 0.2288)}  # Table 6
# The random transformer trains only its embeddings and head: at tiny width it learns
# addition only with 2-digit operands, a fan-in initialisation (the small-output one leaves its
# frozen blocks nearly silent) and a large learning rate (docs/presets.md). Each model keeps
# its own tuned settings, as
# in the paper's per-model grid search. MixiT needs fewer steps than the random transformer
# (docs/reproduce.md).
TINY_TASK = {
    "task.num_digits": 2,
    "task.n_train": 5000,
    "task.n_test": 1000,
    "train.steps": 600,
    "train.batch_size": 64,
}
TINY_MODEL = {
    "random": {"model.init": "fan-in", "train.lr": 3e-2},
    "mixit": {},
    "mixit-plain-residual": {"model.residual_lambda": None},
}
# Every series trains the same 600 steps at every scale but paper: a verdict that MixiT fails
# at depth must not come from a shorter budget than the random transformer's (tiny trained
# MixiT 400 steps until the tuning protocol; docs/tuning.md).
SMALL = {m: {**TINY_TASK, **TINY_MODEL[m]} for m in SERIES}
SETTINGS = {
    "tiny": SMALL,
    "small": SMALL,
    "paper": {"mixit": {}, "mixit-plain-residual": {"model.residual_lambda": None}, "random": {}},
}


def _runs(scale: str, series: str, depth: int, seeds: range) -> list[Run]:
    overrides = {"model.n_layer": depth, **SETTINGS[scale][series]}
    return runs("addition", [VARIANT[series]], seeds, scale, overrides)


def plan(scale: str, seeds: range) -> list[Run]:
    return [run for m in SERIES for d in DEPTHS for run in _runs(scale, m, d, seeds)]


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C8: MixiT keeps its depth-2 accuracy at the largest depth, the random transformer
    loses it."""
    accuracy = results["accuracy"]  # {model: [[accuracy per seed] per depth]}
    means = {m: [mean(v) for v in accuracy[m]] for m in SERIES}
    keep, collapse = margin("C8", "keep"), margin("C8", "collapse")
    readings = {
        f"mixit: largest depth - depth 2 >= -{keep:.2f}": per_seed(
            paired(accuracy["mixit"][-1], accuracy["mixit"][0]), -keep
        ),
        f"random: depth 2 - largest depth >= {collapse:.2f}": per_seed(
            paired(accuracy["random"][0], accuracy["random"][-1]), collapse
        ),
    }
    return [judged("C8", readings, means)]


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    accuracy = {
        m: [metric_values(summaries, _runs(scale, m, d, seeds), "test_accuracy") for d in DEPTHS]
        for m in SERIES
    }
    line_plot(
        out / "table6.png",
        DEPTHS,
        accuracy,
        f"Addition accuracy against depth ({ran(scale, seeds)})",
        "layers",
        "test accuracy",
        bounds=ACCURACY_BOUNDS,
    )
    paper = {**PAPER, "mixit-plain-residual": (None,) * len(DEPTHS)}
    rows = [
        [
            m,
            *(
                f"{percent(p) if p else '-'} / {mean_std(v)}"
                for p, v in zip(paper[m], accuracy[m], strict=True)
            ),
        ]
        for m in SERIES
    ] + [
        [
            f"{m}: ours against the paper",
            *(
                points_from_paper(mean(v), p) if p else "-"
                for p, v in zip(paper[m], accuracy[m], strict=True)
            ),
        ]
        for m in SERIES
        if any(paper[m])
    ]
    markdown = "\n\n".join(
        [
            "Decimal addition test accuracy (exact match), paper / ours, by depth; C8 judges "
            "`mixit` (the shaped residual of the paper and the authors' code), "
            "`mixit-plain-residual` is a diagnostic beside it. "
            + (
                f"Settings at this scale, per model: {SETTINGS[scale]}. "
                if any(SETTINGS[scale].values())
                else ""
            )
            + seeds_note(seeds),
            markdown_table(["model", *(f"depth {d}" for d in DEPTHS)], rows),
            "![table 6](table6.png)",
        ]
    )
    results = {"depths": list(DEPTHS), "accuracy": accuracy}
    return Report(markdown, results, judge(results))


def headlines(scale: str, seeds: range) -> dict[str, list[Headline]]:
    """C8 turns on MixiT's accuracy (shaped residual, as the paper builds it) at the largest
    depth."""
    deepest = DEPTHS[-1]
    shaped = tuple(_runs(scale, "mixit", deepest, seeds))
    return {"C8": [Headline(f"addition, depth {deepest}", shaped)]}


EXPERIMENT = Experiment(
    "table6",
    "Table 6: depth, MixiT vs the random transformer",
    plan,
    report,
    judge,
    headlines=headlines,
    # The random transformer's fan-in initialisation was chosen for it; under --tune lr
    # MixiT gets the same choice (docs/tuning.md).
    tune_inits=("small-output", "fan-in"),
)
