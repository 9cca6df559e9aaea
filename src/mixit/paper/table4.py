"""Table 4: memorization accuracy, bits per parameter, trainable parameters; claim C6."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.plots import bar_plot
from mixit.paper.claims import judged, margin, per_seed
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
from mixit.study.measures import by_model, mean, mean_std, seeds_note
from mixit.study.text import against_paper, markdown_table, ran

MODELS = ("standard", "frozen-mlp", "frozen-qk", "mixit")
PAPER = {  # Table 4: accuracy, bits per parameter, trainable parameters
    "standard": (1.00, 2.98, 790400),
    "frozen-mlp": (0.19, 1.13, 394880),
    "frozen-qk": (0.69, 2.25, 724352),
    "mixit": (0.67, 2.18, 724736),
}


def plan(scale: str, seeds: range) -> list[Run]:
    return runs("memorization", MODELS, seeds, scale)


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """C6: standard > Frozen-QK ~ MixiT > Frozen-MLP in mean bits per parameter."""
    bits = results["bits_per_param"]
    seeds = list(zip(*(bits[m] for m in MODELS), strict=True))  # one (bits per model) per seed
    per_model = [dict(zip(MODELS, seed, strict=True)) for seed in seeds]
    close = margin("C6", "close")
    readings = {
        "standard > max(frozen-qk, mixit)": per_seed(
            [b["standard"] - max(b["frozen-qk"], b["mixit"]) for b in per_model], strict=True
        ),
        f"|frozen-qk - mixit| <= {close:g} x standard": per_seed(
            [close * b["standard"] - abs(b["frozen-qk"] - b["mixit"]) for b in per_model]
        ),
        "min(frozen-qk, mixit) > frozen-mlp": per_seed(
            [min(b["frozen-qk"], b["mixit"]) - b["frozen-mlp"] for b in per_model], strict=True
        ),
    }
    return [judged("C6", readings, {m: mean(bits[m]) for m in MODELS})]


def _against(ours: list[float], paper: float) -> str:
    return against_paper(mean(ours), paper)


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    selected = runs("memorization", MODELS, seeds, scale)
    accuracy = by_model(summaries, selected, "test_accuracy")
    bits = by_model(summaries, selected, "bits_per_param")
    trainable = {run.model: summaries[run]["params_trainable"] for run in selected}
    rows = [
        [
            m,
            f"{PAPER[m][0]:.0%} / {mean_std(accuracy[m])}",
            f"{PAPER[m][1]:.2f} / {mean_std(bits[m])} ({_against(bits[m], PAPER[m][1])})",
            f"{PAPER[m][2]:,} / {trainable[m]:,}",
        ]
        for m in MODELS
    ]
    bar_plot(
        out / "bits_per_param.png",
        bits,
        f"Memorization capacity ({ran(scale, seeds)})",
        "bits/param",
    )
    markdown = "\n\n".join(
        [
            "Paper / ours. Bits per parameter = bits of the memorized values recalled / "
            "trainable parameters. " + seeds_note(seeds),
            markdown_table(["model", "accuracy", "bits per parameter", "trainable"], rows),
            "![bits per parameter](bits_per_param.png)",
        ]
    )
    results = {"accuracy": accuracy, "bits_per_param": bits, "params_trainable": trainable}
    return Report(markdown, results, judge(results))


def headlines(scale: str, seeds: range) -> dict[str, list[Headline]]:
    """C6 turns on MixiT's bits per parameter (no reference: every model memorizes)."""
    mixit = tuple(runs("memorization", ["mixit"], seeds, scale))
    return {"C6": [Headline("memorization bits/param", mixit, "bits_per_param")]}


EXPERIMENT = Experiment(
    "table4", "Table 4: memorization capacity", plan, report, judge, headlines=headlines
)
