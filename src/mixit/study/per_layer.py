"""``mixit compare --per-layer VARIANT``: which layers need the reference's mixer, read from
hybrids (docs/rows.md, "Which layer needs what").

For a model of L layers it trains, beside the reference and VARIANT in every layer, the
placements that put VARIANT in all layers but one (the reference's layer there) and in one
layer only (the reference's layers elsewhere). Each placement is a hybrid whose base is VARIANT
(``variants.HYBRID_SYNTAX``), so all of them share VARIANT's model-wide settings (positions,
residual, construction), and the litmus test reads each against the reference. Per layer:

- *needs* the reference's mixer: VARIANT in that layer alone falls short;
- *does without* it: VARIANT in that layer alone matches;
- *rescues*: the reference's mixer in that layer alone, VARIANT elsewhere, matches.

With two layers "VARIANT in layer 0 only" is "the reference in layer 1 only": one model serves
both cells.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.common.plots import COLUMN, SEQUENTIAL, fitted, metric_label, save, styled
from mixit.models.variants import HYBRID_JOIN

REFERENCE = "standard"
ONLY, ALL_BUT = "only", "all-but"  # VARIANT in the layer only; VARIANT in all layers but it
# A cell's verdict, short enough for a figure's cell.
MARKS = {True: "match", False: "short", None: "open"}


@dataclass(frozen=True)
class Placement:
    """Where VARIANT goes: in ``layer`` only, or in every layer but ``layer``; ``model`` is
    the hybrid that builds it."""

    layer: int
    kind: str
    model: str


def placements(variant: str, layers: int) -> list[Placement]:
    """The 2 L placements of ``variant`` in a model of ``layers`` layers."""
    found = []
    for layer in range(layers):
        others = ".".join(str(other) for other in range(layers) if other != layer)
        only = f"{variant}{HYBRID_JOIN}{REFERENCE}@{others}" if others else variant
        found.append(Placement(layer, ONLY, only))
        found.append(Placement(layer, ALL_BUT, f"{variant}{HYBRID_JOIN}{REFERENCE}@{layer}"))
    return found


def per_layer_models(variant: str, layers: int) -> list[str]:
    """The models ``--per-layer`` trains: the reference, ``variant`` in every layer, and each
    placement's hybrid once. One layer has nothing to place: its only placements are the
    reference and ``variant`` themselves."""
    if layers < 2:
        raise UsageError(
            f"--per-layer places {variant} layer by layer, and model.n_layer={layers} has one "
            f"layer: compare the two models (--models {REFERENCE},{variant}) or give more layers"
        )
    hybrids = [p.model for p in placements(variant, layers)]
    return list(dict.fromkeys([REFERENCE, variant, *hybrids]))


class LayerReading(TypedDict):
    """One layer's cells: the hybrid of each placement, its mean metric and its verdict
    (True matches, False falls short, None open), and the reading."""

    layer: int
    only: str
    only_mean: float
    only_matches: bool | None
    all_but: str
    all_but_mean: float
    all_but_matches: bool | None
    reading: str


class NecessityMap(TypedDict):
    """``necessity.json``: the task, VARIANT, the metric, the reference's and VARIANT's means
    and VARIANT's verdict, and each layer's reading."""

    task: str
    variant: str
    metric: str
    reference_mean: float
    variant_mean: float
    variant_matches: bool | None
    layers: list[LayerReading]


def _layer_reading(only: bool | None, all_but: bool | None, variant: str) -> str:
    reading = {
        False: f"needs {REFERENCE}'s mixer: {variant} here alone falls short",
        True: f"does without it: {variant} here alone matches",
        None: f"open: {variant} here alone is undecided",
    }[only]
    return reading + (f"; {REFERENCE}'s mixer here alone rescues {variant}" if all_but else "")


def necessity_map(result: Mapping[str, Any], variant: str, layers: int) -> NecessityMap:
    """The map of a comparison (compare.json) that trained ``per_layer_models``."""
    means = {row["model"]: row["mean"] for row in result["rows"]}
    verdicts = {row["model"]: row["matches"] for row in result["litmus"].get("rows", [])}
    by_cell = {(p.layer, p.kind): p.model for p in placements(variant, layers)}
    readings: list[LayerReading] = []
    for layer in range(layers):
        only, all_but = by_cell[layer, ONLY], by_cell[layer, ALL_BUT]
        readings.append(
            {
                "layer": layer,
                "only": only,
                "only_mean": means[only],
                "only_matches": verdicts.get(only),
                "all_but": all_but,
                "all_but_mean": means[all_but],
                "all_but_matches": verdicts.get(all_but),
                "reading": _layer_reading(verdicts.get(only), verdicts.get(all_but), variant),
            }
        )
    return {
        "task": result["task"],
        "variant": variant,
        "metric": result["metric"],
        "reference_mean": means[REFERENCE],
        "variant_mean": means[variant],
        "variant_matches": verdicts.get(variant),
        "layers": readings,
    }


def format_necessity(found: NecessityMap) -> str:
    """The map in words: one line per layer, then which layers need the reference's mixer
    and which one rescues VARIANT."""
    variant = found["variant"]
    lines = [
        "",
        f"per layer ({variant} against {REFERENCE}, {found['metric']}; {REFERENCE} "
        f"{found['reference_mean']:.4f}, {variant} everywhere {found['variant_mean']:.4f}):",
    ]
    for cell in found["layers"]:
        lines.append(
            f"  layer {cell['layer']}: {variant} here only {cell['only_mean']:.4f}, "
            f"{REFERENCE} here only {cell['all_but_mean']:.4f}; {cell['reading']}"
        )
    needs = [str(c["layer"]) for c in found["layers"] if c["only_matches"] is False]
    rescue = [str(c["layer"]) for c in found["layers"] if c["all_but_matches"] is True]
    lines.append(f"  layers that need {REFERENCE}'s mixer: {', '.join(needs) or 'none'}")
    lines.append(f"  one {REFERENCE} layer rescues {variant}: {', '.join(rescue) or 'none'}")
    return "\n".join(lines)


def write_necessity(found: NecessityMap, out: Path) -> None:
    """OUT/necessity.json and OUT/necessity.png (with its PDF)."""
    write_json(out / "necessity.json", found)
    draw_necessity(found, out / "necessity.png")


def draw_necessity(found: NecessityMap, path: Path) -> None:
    """Layers across, the two placements down; each cell its mean metric and its verdict's
    mark, the colour scale spanning the reference and VARIANT everywhere."""
    variant, cells = found["variant"], found["layers"]
    values = [[c["only_mean"] for c in cells], [c["all_but_mean"] for c in cells]]
    marks = [[c["only_matches"] for c in cells], [c["all_but_matches"] for c in cells]]
    low = min(found["reference_mean"], found["variant_mean"], *values[0], *values[1])
    high = max(found["reference_mean"], found["variant_mean"], *values[0], *values[1])
    with styled() as plt:
        # Wide enough for a cell's two short lines at 7 pt, one column at the least.
        fig, ax = plt.subplots(figsize=(max(COLUMN, 1.8 + 0.6 * len(cells)), 2.2))
        image = ax.imshow(values, cmap=SEQUENTIAL, vmin=low, vmax=high, aspect="auto")
        for row, (means, verdicts) in enumerate(zip(values, marks, strict=True)):
            for layer, (mean, verdict) in enumerate(zip(means, verdicts, strict=True)):
                text = f"{mean:.2f}\n{MARKS[verdict]}"
                shade = "black" if mean > (low + high) / 2 else "white"
                ax.text(layer, row, text, ha="center", va="center", fontsize=7, color=shade)
        ax.set_xticks(range(len(cells)), [f"layer {c['layer']}" for c in cells])
        ax.set_yticks([0, 1], [f"{variant} here only", f"{REFERENCE} here only"])
        ax.grid(visible=False)
        title = (
            f"{found['task']}: {REFERENCE} {found['reference_mean']:.2f}, {variant} "
            f"everywhere {found['variant_mean']:.2f}; each cell against {REFERENCE}"
        )
        ax.set_title(fitted(title))
        fig.colorbar(image, ax=ax, label=metric_label(found["metric"]))
        fig.tight_layout()
        save(fig, path)
