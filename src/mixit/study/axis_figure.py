"""An axis's figure (``OUT/axis.png``): each model's score along the axis, its spread, chance,
and where each model breaks."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.plots import (
    ACCURACY_BOUNDS,
    COLUMN,
    clipped_band,
    fitted,
    legend_below,
    metric_label,
    save,
    series_style,
    styled,
)
from mixit.tuning.rules import CEILING

# A break point's outcome where the model falls short at a value (axis.py's readings use it).
BREAKS = "breaks"


def plot_axis(path: Path, result: Mapping[str, Any]) -> None:
    """Each model's mean over seeds with a band of one std, chance dashed, and a cross at
    each model's break point."""
    points = result["points"]
    labels = [str(p["value"]) for p in points]
    numeric = all(_is_number(label) for label in labels)
    # Values that are not numbers (file pairs) stand at their places, named by their folder.
    xs = [float(label) for label in labels] if numeric else [float(i) for i in range(len(points))]
    if not numeric:
        labels = [Path(label.split(",")[0]).parent.name or label for label in labels]
    breaks = {b["model"]: b for b in result["break_points"]}
    first = points[0]["compare"]
    bounds = ACCURACY_BOUNDS if first["metric"] in CEILING else None
    models = [r["model"] for r in first["rows"]]
    with styled() as plt:
        fig, ax = plt.subplots(figsize=(COLUMN, 2.6))
        for index, model in enumerate(models):
            values = [next(r for r in p["compare"]["rows"] if r["model"] == model) for p in points]
            means = [statistics.fmean(r["values"]) for r in values]
            stds = [statistics.stdev(r["values"]) if len(r["values"]) > 1 else 0 for r in values]
            style = series_style(model, index)
            ax.plot(xs, means, markersize=3.5, label=model, **style)
            low, high = clipped_band(means, stds, bounds)
            ax.fill_between(xs, low, high, color=style["color"], alpha=0.15, linewidth=0)
            if model in breaks and breaks[model]["outcome"] == BREAKS:
                at = [str(p["value"]) for p in points].index(str(breaks[model]["at"]))
                ax.plot(xs[at], means[at], "x", color=style["color"], markersize=11, mew=2)
        chance = [p["compare"]["chance"] for p in points]
        ax.plot(xs, chance, linestyle="--", linewidth=0.9, color="#444444", label="chance")
        if numeric:
            ax.set_xscale("log", base=2)
            labels = [f"{x:g}" for x in xs]
        ax.set_xticks(xs, labels)
        ax.minorticks_off()
        seeds, tuned = first["seeds"], "tuned" if first.get("tuned") else "untuned"
        shown = f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}"
        ax.set(
            title=fitted(
                f"{first['task']}: {metric_label(first['metric'])} along {result['key']} "
                f"({shown}, {tuned}; x: breaks)"
            ),
            xlabel=result["key"],
            ylabel=metric_label(first["metric"]),
        )
        legend_below(ax, len(models) + 1)
        fig.tight_layout()
        save(fig, path)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
