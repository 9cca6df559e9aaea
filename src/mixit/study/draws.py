"""``compare --frozen-draws K``: the comparison again under K draws of what the variants keep
untrained (``model.frozen_seed``), crossed with the data seeds: every draw meets every seed.

A verdict on one draw is a verdict on that draw. Read over K, it says whether it holds on
every draw, and the variant's spread splits into the part the draw makes and the part the
data seed makes (a two-way random-effects split of the draws x seeds table, one run a cell):

    draws 10000, 10001; seeds 0, 1, 2; MixiT's test accuracy per cell
        [[0.30, 0.32, 0.31],      draw means 0.310, 0.610: the draw's part is most of it
         [0.60, 0.62, 0.61]]      seed means 0.45, 0.47, 0.46: the seed's part is small
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.common.plots import save, series_style, styled
from mixit.models.variants import variant_named
from mixit.study.comparison import ComparisonResult
from mixit.study.litmus import VERDICTS
from mixit.study.per_layer import MARKS
from mixit.study.text import duration

# Draw d's frozen seed is FIRST_DRAW + d: apart from the data and tuning seeds the docs use
# (0-2, 100-102, 300-302, 400-402, 1000, 2000-2009), and the same for every data seed.
FIRST_DRAW = 10_000
FROZEN_KEY = "model.frozen_seed"
REFERENCE = "standard"


def draw_seeds(count: int) -> list[int]:
    """The frozen seeds of ``count`` draws."""
    return [FIRST_DRAW + d for d in range(count)]


def keeps_a_draw(model: str) -> bool:
    """Whether ``model`` keeps something untrained that a draw changes."""
    return variant_named(model).draws_frozen


def check_frozen_seed(models: Sequence[str], overrides: Mapping[str, Any]) -> None:
    """Refuse ``model.frozen_seed`` where none of ``models`` keeps a draw: it would change
    nothing (an override that does nothing is refused, not ignored)."""
    if overrides.get(FROZEN_KEY) is not None and not any(map(keeps_a_draw, models)):
        raise UsageError(
            f"{FROZEN_KEY} draws what a variant keeps untrained, and {', '.join(models)} keeps "
            "none (mixit, frozen-qk, frozen-mlp and random do): it would change nothing"
        )


@dataclass(frozen=True)
class Spread:
    """The std of a draws x seeds table split three ways: between draws, between data seeds,
    and what neither explains (their interaction and noise); each component's variance is
    estimated from the table's mean squares, floored at 0."""

    draw: float
    seed: float
    residual: float


def split_spread(table: Sequence[Sequence[float]]) -> Spread:
    """``table[d][s]``, one value per draw and seed (two of each at least), split into its
    draw, seed and residual std (expected mean squares of a crossed design without
    replication: draw MS = residual + seeds x draw variance, and so on)."""
    draws, seeds = len(table), len(table[0])
    grand = statistics.fmean(v for row in table for v in row)
    by_draw = [statistics.fmean(row) for row in table]
    by_seed = [statistics.fmean(row[s] for row in table) for s in range(seeds)]
    ms_draw = seeds * sum((m - grand) ** 2 for m in by_draw) / (draws - 1)
    ms_seed = draws * sum((m - grand) ** 2 for m in by_seed) / (seeds - 1)
    residuals = [
        table[d][s] - by_draw[d] - by_seed[s] + grand for d in range(draws) for s in range(seeds)
    ]
    ms_residual = sum(r**2 for r in residuals) / ((draws - 1) * (seeds - 1))
    return Spread(
        draw=max(0.0, (ms_draw - ms_residual) / seeds) ** 0.5,
        seed=max(0.0, (ms_seed - ms_residual) / draws) ** 0.5,
        residual=ms_residual**0.5,
    )


@dataclass(frozen=True)
class DrawReading:
    """One model over the draws: its verdict on each (True matches, False falls short, None
    open), whether one verdict holds on every draw, its metric per draw and seed, and the
    split of its spread (None with fewer than two draws or seeds)."""

    model: str
    draws: list[int]
    verdicts: list[bool | None]
    holds: bool
    values: list[list[float]]
    spread: Spread | None
    reading: str


def _sentence(model: str, verdicts: Sequence[bool | None], unreferenced: Sequence[int]) -> str:
    """What the verdicts over the draws say (``unreferenced``: the draws whose reference did
    not learn, which give no verdict)."""
    if unreferenced:
        draws = ", ".join(map(str, unreferenced))
        return f"no verdict: the reference did not learn on draw {draws} (each draw's table says)"
    if len(set(verdicts)) == 1:
        return f"{VERDICTS[verdicts[0]]} on every draw ({len(verdicts)})"
    counts = ", ".join(
        f"{VERDICTS[v]} on {verdicts.count(v)}" for v in (True, False, None) if v in verdicts
    )
    if True in verdicts and False in verdicts:
        return (
            f"the draws disagree ({counts} of {len(verdicts)}): the verdict is one of {model}'s "
            "draws, not of the variant; more draws estimate how often a draw suffices"
        )
    # Decided draws agree and the rest are open: no draw says otherwise yet.
    none = "falls short" if True in verdicts else "matches"
    return (
        f"{counts} of {len(verdicts)}: no draw {none}; each open draw's reading says what "
        "would decide it"
    )


def read_draws(results: Mapping[int, ComparisonResult]) -> list[DrawReading]:
    """Each model that keeps a draw, read over ``results`` (a comparison per frozen seed)."""
    seeds = list(results)
    first = results[seeds[0]]
    models = [row["model"] for row in first["rows"] if keeps_a_draw(row["model"])]
    unreferenced = [seed for seed in seeds if results[seed]["litmus"].get("no_reference")]
    readings = []
    for model in models:
        verdicts = [_verdict(results[seed], model) for seed in seeds]
        values = [_row(results[seed], model).get("values", []) for seed in seeds]
        # A crossed table: every draw on the same seeds (--seeds auto may stop apart).
        splittable = (
            len(values) > 1 and min(map(len, values)) > 1 and len(set(map(len, values))) == 1
        )
        readings.append(
            DrawReading(
                model=model,
                draws=seeds,
                verdicts=verdicts,
                holds=len(set(verdicts)) == 1 and verdicts[0] is not None,
                values=values,
                spread=split_spread(values) if splittable else None,
                reading=_sentence(model, verdicts, unreferenced),
            )
        )
    return readings


def _row(result: ComparisonResult, model: str) -> Mapping[str, Any]:
    return next(row for row in result["rows"] if row["model"] == model)


def _verdict(result: ComparisonResult, model: str) -> bool | None:
    rows = result["litmus"].get("rows", [])
    return next((row["matches"] for row in rows if row["model"] == model), None)


def format_draws(readings: Sequence[DrawReading]) -> str:
    """The reading over the draws: each model's verdict per draw, and its spread split."""
    lines = ["over the frozen draws (each draw crossed with every data seed):"]
    for r in readings:
        marks = " ".join(MARKS[v] for v in r.verdicts)
        lines.append(f"  {r.model}: {marks}: {r.reading}")
        if r.spread is not None:
            s = r.spread
            lines.append(
                f"    spread: {s.draw:.4f} between draws, {s.seed:.4f} between data seeds, "
                f"{s.residual:.4f} neither (std)"
            )
    return "\n".join(lines)


def plot_draws(readings: Sequence[DrawReading], reference: Sequence[float], path: Path) -> None:
    """A panel per model that keeps a draw: its metric on each seed (a marker each) at each
    draw, the reference's mean as a dashed line, and the model's verdict per draw under it."""
    with styled() as plt:
        fig, axes = plt.subplots(1, len(readings), figsize=(2.4 * len(readings) + 0.6, 2.6),
                                 sharey=True, squeeze=False)  # fmt: skip
        for ax, r in zip(axes[0], readings, strict=True):
            for d, values in enumerate(r.values):
                style = {**series_style(r.model, 0), "linestyle": ""}  # markers only
                ax.plot([d] * len(values), values, **style)
            if reference:
                ax.axhline(
                    statistics.fmean(reference), color="#000000", linewidth=0.8, linestyle="--"
                )
            names = [f"{seed}\n{MARKS[v]}" for seed, v in zip(r.draws, r.verdicts, strict=True)]
            ax.set_xticks(range(len(r.draws)), names, fontsize=6)
            ax.set_title(r.model, fontsize=8)
            ax.set_xlabel("frozen draw (model.frozen_seed), verdict", fontsize=7)
        axes[0][0].set_ylabel("headline metric, one marker a seed")
        fig.suptitle("each frozen draw crossed with every seed (dashed: the reference)", y=1.04)
        save(fig, path)


def share_undrawn(source: Path, target: Path) -> None:
    """Copy into ``target`` each finished run of ``source`` that no draw changed (its config's
    ``model.frozen_seed`` unset: the reference, and the rows that keep no draw, with their
    tuning runs), so that every draw reads the same runs of them instead of training them
    again. A copy, not a link: a run's files must be its own (``RunDir.check_own_files``)."""
    if source == target or not source.is_dir():
        return
    for run in sorted(source.iterdir()):
        if (target / run.name).exists() or not (run / "summary.json").is_file():
            continue
        try:
            config = json.loads((run / "config.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(config, dict) and config.get("model", {}).get("frozen_seed") is None:
            partial = target / f".{run.name}.copying"  # renamed whole: never half a run
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(run, partial)
            partial.rename(target / run.name)


def draws_estimate_line(rows: Sequence[Mapping[str, Any]], count: int) -> str:
    """What ``--frozen-draws`` adds to one comparison's estimate (``rows``, a row per model):
    the models that keep a draw trained again on each further draw (the others are shared)."""
    drawn = [row for row in rows if keeps_a_draw(row["model"])]
    seconds = (count - 1) * sum(row["runs"] * row["run_seconds"] for row in drawn)
    names = ", ".join(row["model"] for row in drawn)
    return (
        f"plus --frozen-draws {count}: {names} again on {count - 1} more draws, up to about "
        f"{duration(seconds)} more, one run after another (each draw tuned as its own "
        "comparison where it tunes)"
    )


def along_draws(
    count: int,
    out: Path,
    overrides: Mapping[str, Any],
    compare_point: Callable[[Path, dict[str, Any]], ComparisonResult],
) -> list[DrawReading]:
    """The comparison under each of ``count`` draws, in ``out/draw-SEED`` (the models that
    keep no draw are the same runs in every one), then the reading over them, written to
    ``out/draws.json``."""
    results = {}
    seeds = draw_seeds(count)
    for at, seed in enumerate(seeds, 1):
        print(f"mixit: {FROZEN_KEY}={seed}, draw {at} of {count}", file=sys.stderr)
        share_undrawn(out / f"draw-{seeds[0]}" / "runs", out / f"draw-{seed}" / "runs")
        point = {**overrides, FROZEN_KEY: seed}
        results[seed] = compare_point(out / f"draw-{seed}", point)
    readings = read_draws(results)
    write_json(out / "draws.json", {"draws": [asdict(r) for r in readings]})
    rows = {row["model"]: row for row in results[seeds[0]]["rows"]}
    reference = rows[REFERENCE].get("values", []) if REFERENCE in rows else []
    plot_draws(readings, reference, out / "draws.png")
    return readings
