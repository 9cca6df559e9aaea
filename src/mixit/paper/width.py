"""Width: do the verdicts that fail at laptop width move at the paper's? (``reproduce width``;
a question of this project, not a result of the paper, so not part of ``reproduce all``.)

Three questions, each asked at every width of the scale (``WIDTHS``):

- retrieval (C1): standard and Frozen-QK under each construction, with table 1's settings.
  Beside the accuracy, Frozen-QK's frozen attention: its uniformity at initialisation and
  after training, and the spread of its query-key logits at initialisation, which under the
  authors' N(0, 0.02^2) weights grows as about n sigma^2 (docs/constructions.md);
- depth (C8): MixiT with its shaped residual and the random transformer at depth 16 on table
  6's addition, each with table 6's settings;
- memorization (C6): the four models' bits per parameter, with table 4's settings.

The budget rule, written before any width was trained (docs/width.md): a run at width n is
its question's run at the scale with ``model.n_embd = n`` and nothing else changed. The same
heads (so the head size grows with n), data, steps, batch, schedule and stop rule, and the
same learning rate at every width. That rate is the task preset's or the question's own
setting (a width has no tuned preset), or, under ``--tune lr``, each group's own choice
under the tuning protocol, whose budget rule then also applies. The paper searched one
learning-rate grid at both of its widths (Table 8); steps do not grow with width, so no width
is given more training than another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from mixit.common.io import JSONObject
from mixit.common.plots import ACCURACY_BOUNDS, line_plot
from mixit.config.schema import RunConfig
from mixit.models.heads import attention_patterns, logit_spread, uniformity
from mixit.paper import table4, table6
from mixit.paper.width_reading import CONSTRUCTIONS, DEPTH, reading
from mixit.study.claim import (
    Claim,
)
from mixit.study.experiment import (
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
    measures_nothing,
    runs,
)
from mixit.study.measures import (
    by_model,
    cached_measurement,
    mean,
    mean_std,
    measured_overrides,
    measurement_key,
    metric_values,
    seeds_note,
)
from mixit.study.text import markdown_table, ran
from mixit.tasks import get_task
from mixit.training.resolve import fit_model_to_data
from mixit.training.rundir import load_run, new_model

WIDTHS = {"tiny": (64, 128, 256), "small": (64, 128, 256), "paper": (512, 1024)}
QUESTIONS = ("retrieval", "depth", "memorization")  # C1, C8, C6
RETRIEVAL_MODELS = ("standard", "frozen-qk")
DEPTH_SERIES = ("mixit", "random")
SEQUENCES = 32  # test sequences the frozen attention is read on
INIT_STD = 0.02  # the authors' weights: N(0, 0.02^2) (model.init=gpt2)


def _retrieval(scale: str, construction: str, width: int, seeds: range) -> list[Run]:
    overrides = {"model.n_embd": width, "model.construction": construction}
    return runs("retrieval", RETRIEVAL_MODELS, seeds, scale, overrides)


def _depth(scale: str, series: str, width: int, seeds: range) -> list[Run]:
    overrides = {"model.n_layer": DEPTH, **table6.SETTINGS[scale][series], "model.n_embd": width}
    return runs("addition", [table6.VARIANT[series]], seeds, scale, overrides)


def _memorization(scale: str, width: int, seeds: range) -> list[Run]:
    return runs("memorization", table4.MODELS, seeds, scale, {"model.n_embd": width})


def _retrieval_runs(scale: str, width: int, seeds: range) -> list[Run]:
    return [r for c in CONSTRUCTIONS for r in _retrieval(scale, c, width, seeds)]


def _depth_runs(scale: str, width: int, seeds: range) -> list[Run]:
    return [r for s in DEPTH_SERIES for r in _depth(scale, s, width, seeds)]


# Each question's runs at one width.
QUESTION_RUNS: dict[str, Callable[[str, int, range], list[Run]]] = {
    "retrieval": _retrieval_runs,
    "depth": _depth_runs,
    "memorization": _memorization,
}


def planner(questions: tuple[str, ...]) -> Callable[[str, range], list[Run]]:
    """The plan of an experiment asking ``questions`` (of ``QUESTIONS``) at every width."""

    def plan(scale: str, seeds: range) -> list[Run]:
        return [
            r for w in WIDTHS[scale] for q in questions for r in QUESTION_RUNS[q](scale, w, seeds)
        ]

    return plan


plan = planner(QUESTIONS)


def _frozen_qk_at_init(
    scale: str, construction: str, width: int, seed: int, overrides: Overrides
) -> RunConfig:
    (run,) = [
        r
        for r in _retrieval(scale, construction, width, range(seed, seed + 1))
        if r.model == "frozen-qk"
    ]
    return run.config(scale, measured_overrides(overrides))


def measures(scale: str, seeds: range, overrides: Overrides) -> list[RunConfig]:
    return [
        _frozen_qk_at_init(scale, c, w, seed, overrides)
        for c in CONSTRUCTIONS
        for w in WIDTHS[scale]
        for seed in seeds
    ]


def frozen_attention(model: torch.nn.Module, inputs: torch.Tensor) -> dict[str, float]:
    """A decoder's attention on ``inputs`` (S, T): its uniformity (mean over layers and heads)
    and the spread of its logits."""
    with torch.no_grad():
        patterns = attention_patterns(model, inputs)  # (L, B, H, T, T)
    return {
        "uniformity": uniformity(patterns).mean().item(),
        "logit_spread": logit_spread(patterns),
    }


def _attention_at_init(scale: str, seeds: range, overrides: Overrides) -> JSONObject:
    """{construction: [[{uniformity, logit_spread} per seed] per width]} of Frozen-QK as
    initialised, on retrieval's test sequences."""
    table: dict[str, Any] = {}
    for construction in CONSTRUCTIONS:
        table[construction] = []
        for width in WIDTHS[scale]:
            per_seed = []
            for seed in seeds:
                config = _frozen_qk_at_init(scale, construction, width, seed, overrides)
                data = get_task("retrieval").make_data(config.task, seed)
                config = fit_model_to_data(config, data)
                torch.manual_seed(config.seed)
                per_seed.append(frozen_attention(new_model(config), data.test.inputs[:SEQUENCES]))
            table[construction].append(per_seed)
    return table


def _attention_trained(scale: str, seeds: range, summaries: Summaries) -> JSONObject:
    """As ``_attention_at_init``, of each trained Frozen-QK retrieval run."""
    table: dict[str, Any] = {}
    for construction in CONSTRUCTIONS:
        table[construction] = []
        for width in WIDTHS[scale]:
            per_seed = []
            for run in _retrieval(scale, construction, width, seeds):
                if run.model != "frozen-qk":
                    continue
                model, config = load_run(summaries[run]["run_dir"])
                inputs = get_task("retrieval").make_data(config.task, config.seed).test.inputs
                per_seed.append(frozen_attention(model, inputs[:SEQUENCES]))
            table[construction].append(per_seed)
    return table


def judge(results: Mapping[str, Any]) -> list[Claim]:
    """No claim of the paper: docs/constructions.md reads each claim's verdict against width
    from these results."""
    return []


def _width_table(
    label: str, series: Mapping[str, list[list[float]]], widths: tuple[int, ...]
) -> str:
    rows = [
        [name, *(mean_std(values) for values in per_width)] for name, per_width in series.items()
    ]
    return markdown_table([label, *(f"n = {w}" for w in widths)], rows)


# A question's part of the report: its markdown paragraphs and its entries of results.json.
Section = tuple[list[str], JSONObject]


def _retrieval_section(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Section:
    """Retrieval's accuracy by model and construction, and Frozen-QK's frozen attention at
    initialisation and after training."""
    widths = WIDTHS[scale]
    accuracy = {
        f"{m} ({c})": [
            by_model(summaries, _retrieval(scale, c, w, seeds), "test_accuracy")[m] for w in widths
        ]
        for c in CONSTRUCTIONS
        for m in RETRIEVAL_MODELS
    }
    retrieval_runs = [r for w in widths for r in _retrieval_runs(scale, w, seeds)]
    key = measurement_key(scale, seeds, overrides, widths=list(widths), sequences=SEQUENCES)
    at_init = cached_measurement(
        out / "measurements.json", key, lambda: _attention_at_init(scale, seeds, overrides)
    )
    trained = _attention_trained(scale, seeds, summaries)
    line_plot(
        out / "retrieval.png",
        widths,
        accuracy,
        f"retrieval against width ({ran(scale, seeds)})",
        "width",
        "test accuracy",
        bounds=ACCURACY_BOUNDS,
    )
    attention_rows = [
        [
            f"frozen-qk ({c}): {score.replace('_', ' ')}, {when}",
            *(mean_std([seed[score] for seed in per_width]) for per_width in table[c]),
        ]
        for c in CONSTRUCTIONS
        for score in ("uniformity", "logit_spread")
        for when, table in (("at init", at_init), ("trained", trained))
    ]
    markdown = [
        "Retrieval test accuracy (C1):",
        _width_table("model (construction)", accuracy, widths),
        "Frozen-QK's frozen attention on retrieval: uniformity (1: plain averaging) and the "
        f"spread of its logits, against n sigma^2 at sigma = {INIT_STD} for the authors' "
        "weights: " + ", ".join(f"n = {w}: {w * INIT_STD**2:.3f}" for w in widths) + ".",
        markdown_table(["", *(f"n = {w}" for w in widths)], attention_rows),
    ]
    results = {
        "retrieval_accuracy": accuracy,
        "retrieval_chance": mean([summaries[run]["chance"] for run in retrieval_runs]),
        "frozen_attention_at_init": at_init,
        "frozen_attention_trained": trained,
    }
    return markdown, results


def _depth_section(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Section:
    widths = WIDTHS[scale]
    accuracy = {
        s: [metric_values(summaries, _depth(scale, s, w, seeds), "test_accuracy") for w in widths]
        for s in DEPTH_SERIES
    }
    line_plot(
        out / "depth.png",
        widths,
        accuracy,
        f"depth {DEPTH} against width ({ran(scale, seeds)})",
        "width",
        "test accuracy",
        bounds=ACCURACY_BOUNDS,
    )
    markdown = [
        f"Addition at depth {DEPTH}, test accuracy (C8):",
        _width_table("model", accuracy, widths),
    ]
    return markdown, {"depth_accuracy": accuracy}


def _memorization_section(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Section:
    """Memorization's bits per parameter and the share of its pairs stored."""
    widths = WIDTHS[scale]
    bits, stored = (
        {
            m: [by_model(summaries, _memorization(scale, w, seeds), metric)[m] for w in widths]
            for m in table4.MODELS
        }
        for metric in ("bits_per_param", "train_accuracy")
    )
    line_plot(
        out / "memorization.png",
        widths,
        bits,
        f"memorization against width ({ran(scale, seeds)})",
        "width",
        "bits per parameter",
    )
    markdown = [
        "Memorization, bits per parameter (C6):",
        _width_table("model", bits, widths),
        "Memorization, the share of its pairs stored (at 1, bits per parameter is the "
        "dataset's bits over the trainable parameters):",
        _width_table("model", stored, widths),
    ]
    return markdown, {"bits_per_param": bits, "memorization_accuracy": stored}


SECTIONS = {
    "retrieval": _retrieval_section,
    "depth": _depth_section,
    "memorization": _memorization_section,
}


def reporter(
    questions: tuple[str, ...],
) -> Callable[[str, range, Summaries, Path, Overrides], Report]:
    """The report of an experiment asking ``questions``: each question's section, then the
    reading against width of the claims they turn on."""

    def report(
        scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
    ) -> Report:
        paragraphs = [
            "Each question's runs at every width, nothing else changed (the budget rule of "
            "docs/width.md). " + seeds_note(seeds)
        ]
        results: JSONObject = {"widths": list(WIDTHS[scale])}
        for question in questions:
            markdown, entries = SECTIONS[question](scale, seeds, summaries, out, overrides)
            paragraphs += markdown
            results |= entries
        paragraphs += [
            "Against width, from the smallest to the largest (the reading rule of "
            "docs/width.md, written before any width was trained):",
            reading(results),
            " ".join(f"![{q}]({q}.png)" for q in questions),
        ]
        return Report("\n\n".join(paragraphs), results, judge(results))

    return report


def experiment(
    name: str, title: str, questions: tuple[str, ...], tune_inits: tuple[str, ...] = ()
) -> Experiment:
    """A width experiment asking ``questions`` (of ``QUESTIONS``)."""
    return Experiment(
        name,
        title,
        planner(questions),
        reporter(questions),
        judge,
        measures if "retrieval" in questions else measures_nothing,
        tune_inits=tune_inits,
        tuned_presets=False,
    )


EXPERIMENT = experiment(
    "width", "Width: the claims that fail at laptop width, at larger widths", QUESTIONS
)
# C8 alone, tuned as table 6 is: each series also chooses its initialisation (docs/width.md,
# "The tuned depth pass").
DEPTH_EXPERIMENT = experiment(
    "width-depth",
    f"Width, depth {DEPTH} alone (C8): MixiT against the random transformer",
    ("depth",),
    tune_inits=table6.EXPERIMENT.tune_inits,
)
