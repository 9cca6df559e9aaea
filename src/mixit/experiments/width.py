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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from mixit.analysis.attention import attention_patterns, logit_spread, uniformity
from mixit.arch import build_model
from mixit.config import RunConfig
from mixit.experiments import table4, table6
from mixit.experiments.base import (
    Claim,
    Experiment,
    Overrides,
    Report,
    Run,
    Summaries,
    by_model,
    cached_measurement,
    markdown_table,
    mean,
    mean_std,
    measured_overrides,
    measurement_key,
    metric_values,
    runs,
    seeds_note,
)
from mixit.experiments.plots import line_plot
from mixit.experiments.width_reading import CONSTRUCTIONS, DEPTH, reading
from mixit.resolve import fit_model_to_data
from mixit.rundir import load_run
from mixit.tasks import get_task

WIDTHS = {"tiny": (64, 128, 256), "small": (64, 128, 256), "paper": (512, 1024)}
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


def plan(scale: str, seeds: range) -> list[Run]:
    planned: list[Run] = []
    for width in WIDTHS[scale]:
        planned += [r for c in CONSTRUCTIONS for r in _retrieval(scale, c, width, seeds)]
        planned += [r for s in DEPTH_SERIES for r in _depth(scale, s, width, seeds)]
        planned += _memorization(scale, width, seeds)
    return planned


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


def _attention_at_init(scale: str, seeds: range, overrides: Overrides) -> dict[str, Any]:
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
                fit_model_to_data(config, data)
                torch.manual_seed(config.seed)
                per_seed.append(frozen_attention(build_model(config), data.test.inputs[:SEQUENCES]))
            table[construction].append(per_seed)
    return table


def _attention_trained(scale: str, seeds: range, summaries: Summaries) -> dict[str, Any]:
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


def _metrics(
    scale: str, seeds: range, summaries: Summaries
) -> tuple[dict[str, list[list[float]]], ...]:
    """Each question's metric per model, per width, per seed: retrieval's accuracy (by model
    and construction), the depth-16 accuracy, memorization's bits per parameter and the share
    of its pairs stored."""
    widths = WIDTHS[scale]
    retrieval = {
        f"{m} ({c})": [
            by_model(summaries, _retrieval(scale, c, w, seeds), "test_accuracy")[m] for w in widths
        ]
        for c in CONSTRUCTIONS
        for m in RETRIEVAL_MODELS
    }
    depth = {
        s: [metric_values(summaries, _depth(scale, s, w, seeds), "test_accuracy") for w in widths]
        for s in DEPTH_SERIES
    }
    bits, stored = (
        {
            m: [by_model(summaries, _memorization(scale, w, seeds), metric)[m] for w in widths]
            for m in table4.MODELS
        }
        for metric in ("bits_per_param", "train_accuracy")
    )
    return retrieval, depth, bits, stored


def _markdown(
    widths: tuple[int, ...],
    seeds: range,
    metrics: tuple[dict[str, list[list[float]]], ...],
    at_init: Mapping[str, Any],
    trained: Mapping[str, Any],
    reading_text: str,
) -> str:
    retrieval, depth, bits, stored = metrics
    attention_rows = [
        [
            f"frozen-qk ({c}): {score.replace('_', ' ')}, {when}",
            *(mean_std([seed[score] for seed in per_width]) for per_width in table[c]),
        ]
        for c in CONSTRUCTIONS
        for score in ("uniformity", "logit_spread")
        for when, table in (("at init", at_init), ("trained", trained))
    ]
    return "\n\n".join(
        [
            "Each question's runs at every width, nothing else changed (the budget rule of "
            "docs/width.md). " + seeds_note(seeds),
            "Retrieval test accuracy (C1):",
            _width_table("model (construction)", retrieval, widths),
            f"Addition at depth {DEPTH}, test accuracy (C8):",
            _width_table("model", depth, widths),
            "Memorization, bits per parameter (C6):",
            _width_table("model", bits, widths),
            "Memorization, the share of its pairs stored (at 1, bits per parameter is the "
            "dataset's bits over the trainable parameters):",
            _width_table("model", stored, widths),
            "Frozen-QK's frozen attention on retrieval: uniformity (1: plain averaging) and the "
            f"spread of its logits, against n sigma^2 at sigma = {INIT_STD} for the authors' "
            "weights: " + ", ".join(f"n = {w}: {w * INIT_STD**2:.3f}" for w in widths) + ".",
            markdown_table(["", *(f"n = {w}" for w in widths)], attention_rows),
            "Against width, from the smallest to the largest (the reading rule of "
            "docs/width.md, written before any width was trained):",
            reading_text,
            "![retrieval](retrieval.png) ![depth](depth.png) ![memorization](memorization.png)",
        ]
    )


def report(
    scale: str, seeds: range, summaries: Summaries, out: Path, overrides: Overrides
) -> Report:
    widths = WIDTHS[scale]
    retrieval, depth, bits, stored = metrics = _metrics(scale, seeds, summaries)
    retrieval_runs = [
        r for c in CONSTRUCTIONS for w in widths for r in _retrieval(scale, c, w, seeds)
    ]
    key = measurement_key(scale, seeds, overrides, widths=list(widths), sequences=SEQUENCES)
    at_init = cached_measurement(
        out / "measurements.json", key, lambda: _attention_at_init(scale, seeds, overrides)
    )
    trained = _attention_trained(scale, seeds, summaries)
    for name, series in (("retrieval", retrieval), ("depth", depth), ("memorization", bits)):
        ylabel = "bits per parameter" if name == "memorization" else "test accuracy"
        line_plot(
            out / f"{name}.png", widths, series, f"{name} against width ({scale})", "width", ylabel
        )
    results = {
        "widths": list(widths),
        "retrieval_accuracy": retrieval,
        "depth_accuracy": depth,
        "retrieval_chance": mean([summaries[run]["chance"] for run in retrieval_runs]),
        "bits_per_param": bits,
        "memorization_accuracy": stored,
        "frozen_attention_at_init": at_init,
        "frozen_attention_trained": trained,
    }
    markdown = _markdown(widths, seeds, metrics, at_init, trained, reading(results))
    return Report(markdown, results, judge(results))


EXPERIMENT = Experiment(
    "width",
    "Width: the claims that fail at laptop width, at larger widths",
    plan,
    report,
    judge,
    measures,
)
