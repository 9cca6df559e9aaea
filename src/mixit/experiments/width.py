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

from collections.abc import Mapping, Sequence
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
    spread,
)
from mixit.experiments.claims import margin
from mixit.experiments.plots import line_plot
from mixit.litmus import DEFAULT_TOLERANCE, short_of_chance
from mixit.resolve import fit_model_to_data
from mixit.rundir import load_run
from mixit.tasks import get_task

WIDTHS = {"tiny": (64, 128, 256), "small": (64, 128, 256), "paper": (512, 1024)}
CONSTRUCTIONS = ("equations", "authors")
RETRIEVAL_MODELS = ("standard", "frozen-qk")
DEPTH = 16
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


# The reading against width, written before any width was trained (docs/width.md): a change
# from the smallest width to the largest counts when it exceeds both its floor and twice the
# larger seed spread of the two widths.
ACCURACY_FLOOR = 0.05
BITS_FLOOR = 0.10
# Which way is towards the paper's result, per series a claim turns on: the paper's Frozen-QK
# retrieves (97.0 %), its depth-16 MixiT keeps 100 % and its random transformer collapses to
# 22.9 % (Tables 1 and 6).
TOWARDS_PAPER = {"frozen-qk": "rises", "mixit": "rises", "random": "falls"}


def direction(smallest: Sequence[float], largest: Sequence[float], floor: float) -> str:
    """``rises``, ``falls`` or ``flat``: the change of the mean over seeds from the smallest
    width to the largest, counted only beyond ``floor`` and twice the larger seed spread."""
    change = mean(largest) - mean(smallest)
    if abs(change) <= max(floor, 2 * max(spread(smallest), spread(largest))):
        return "flat"
    return "rises" if change > 0 else "falls"


# A reading needs what it compares to be measurable at both ends (docs/width.md says when
# these guards were added). Frozen-QK's retrieval is read only where the standard model under
# the same construction learned it, by the litmus test's rule (``short_of_chance``): without
# a reference, Frozen-QK at chance says nothing about its frozen attention. C6 is read only
# where no model stored every pair: one that stores them all shows the dataset's bits over its
# parameters, a bound of its capacity and not a measure of it.
STORED_EVERY_PAIR = 1.0 - 1e-9


def _towards(moved: str, model: str) -> str:
    if moved == "flat":
        return "does not move"
    return "towards the paper" if moved == TOWARDS_PAPER[model] else "away from the paper"


def _series_row(
    claim_id: str, name: str, model: str, per_width: list[list[float]], unreadable: str = ""
) -> list[str]:
    """One series' reading; ``unreadable`` (why its ends cannot be compared) replaces it."""
    moved = direction(per_width[0], per_width[-1], ACCURACY_FLOOR)
    change = mean(per_width[-1]) - mean(per_width[0])
    cells = [mean_std(values) for values in per_width]
    verdict = f"no reading: {unreadable}" if unreadable else f"{moved}: {_towards(moved, model)}"
    return [claim_id, name, *cells, f"{change:+.3f}", verdict]


def _unlearned_reference(reference: list[list[float]], widths: Sequence[int], chance: float) -> str:
    """Where the standard model did not learn retrieval at the smallest or largest width, as
    a phrase; "" when it learned at both."""
    tolerance = DEFAULT_TOLERANCE["test_accuracy"]
    short = [
        f"n = {widths[i]}"
        for i in (0, len(widths) - 1)
        if short_of_chance(dict(enumerate(reference[i])), chance, tolerance)
    ]
    if not short:
        return ""
    reached = ", ".join(f"n = {widths[i]}: {mean_std(reference[i])}" for i in range(len(widths)))
    return f"standard did not learn it at {' and '.join(short)} (chance {chance:.3f}; {reached})"


def _saturated(accuracy: Mapping[str, list[list[float]]], widths: Sequence[int]) -> str:
    """The widths at which some model stored every memorization pair on every seed, with those
    models, as a phrase; "" when none did."""
    at = []
    for i, width in enumerate(widths):
        full = [m for m, per_width in accuracy.items() if min(per_width[i]) >= STORED_EVERY_PAIR]
        if full:
            at.append(f"n = {width} ({', '.join(full)})")
    return "; ".join(at)


def _c6_row(
    bits: Mapping[str, list[list[float]]],
    accuracy: Mapping[str, list[list[float]]],
    widths: Sequence[int],
) -> list[str]:
    """C6 judged by its own rule at every width. Its slack, close x standard - |Frozen-QK -
    MixiT| per seed, is what the rule's middle condition reads; a verdict that differs between
    the smallest and largest width counts as moving only when the slack moved too. No reading
    where a model stored every pair (``STORED_EVERY_PAIR``)."""
    at = [{m: values[i] for m, values in bits.items()} for i in range(len(widths))]
    verdicts = [table4.judge({"bits_per_param": b})[0].verdict for b in at]
    close = margin("C6", "close")
    slack = [
        [
            close * s - abs(q - x)
            for s, q, x in zip(b["standard"], b["frozen-qk"], b["mixit"], strict=True)
        ]
        for b in at
    ]
    slack_moved = direction(slack[0], slack[-1], BITS_FLOOR) != "flat"
    saturated = _saturated(accuracy, widths)
    if saturated:
        moved = f"no reading: every pair stored at {saturated}"
    elif verdicts[0] == verdicts[-1]:
        moved = "does not move"
    elif slack_moved:
        moved = f"{verdicts[0]} → {verdicts[-1]}"
    else:
        moved = f"does not move ({verdicts[0]} → {verdicts[-1]} inside the seed spread)"
    cells = [f"{v}; slack {mean_std(s)}" for v, s in zip(verdicts, slack, strict=True)]
    change = mean(slack[-1]) - mean(slack[0])
    return [
        "C6",
        f"verdict; slack {close:g} x standard - abs(frozen-qk - mixit)",
        *cells,
        f"{change:+.3f}",
        moved,
    ]


def reading(results: Mapping[str, Any]) -> str:
    """Per claim the width question turns on, whether its verdict moves with width and which
    way (docs/width.md): C1 by Frozen-QK's retrieval accuracy under each construction, C8 by
    the depth-16 accuracies, C6 by its own rule judged at every width."""
    widths = results["widths"]
    retrieval = results["retrieval_accuracy"]
    rows = [
        _series_row(
            "C1",
            f"frozen-qk ({c})",
            "frozen-qk",
            retrieval[f"frozen-qk ({c})"],
            _unlearned_reference(retrieval[f"standard ({c})"], widths, results["retrieval_chance"]),
        )
        for c in CONSTRUCTIONS
    ]
    rows += [
        _series_row("C8", f"{series} at depth {DEPTH}", series, per_width)
        for series, per_width in results["depth_accuracy"].items()
    ]
    rows.append(_c6_row(results["bits_per_param"], results["memorization_accuracy"], widths))
    header = ["claim", "series", *(f"n = {w}" for w in widths), "change", "reading"]
    return markdown_table(header, rows)


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
