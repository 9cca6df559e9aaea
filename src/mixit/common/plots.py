"""Figures for the reports (matplotlib, written without a display), in one style: sized to read
at one column of a paper (``COLUMN`` inches wide, ``PAGE`` for wide grids), one colour, marker
and line style per model in every figure (``series_style``: Okabe and Ito's colour-blind-safe
palette, markers and dashes that survive a greyscale print), the ``cividis`` map, metrics
named in words (``metric_label``), the legend below the axes rather than over the data, and a
vector PDF beside every PNG (``save``). Every figure has a title and labelled axes."""

from __future__ import annotations

import math
import statistics
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.io import make_dir

COLUMN, PAGE = 3.4, 7.0  # inches: one column, and the whole width, of a two-column paper
SEQUENTIAL = "cividis"  # colour-blind-safe, and readable in greyscale
STYLE = {
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


# Each model's colour, marker and line style, the same in every figure whatever else it plots.
MODEL_STYLES = {
    "standard": ("#000000", "o", "-"),
    "frozen-mlp": ("#56B4E9", "^", "--"),
    "frozen-qk": ("#0072B2", "s", "-."),
    "mixit": ("#D55E00", "D", "-"),
    "random": ("#999999", "X", ":"),
    "mixit-plain-residual": ("#E69F00", "o", "--"),
    "mixit-learned": ("#CC79A7", "v", "--"),
    "uniform": ("#009E73", "P", "-."),
    "no-mixing": ("#A08C00", "*", ":"),
}
# Series that are not models (tasks, hybrids, measurements) take these in their order.
OTHER_STYLES = (
    ("#0072B2", "o", "-"),
    ("#D55E00", "s", "--"),
    ("#009E73", "^", "-."),
    ("#CC79A7", "D", ":"),
    ("#E69F00", "v", "-"),
    ("#56B4E9", "P", "--"),
    ("#000000", "X", "-."),
    ("#999999", "*", ":"),
)
# Metrics in words, for axis labels; a metric not listed is shown by its key.
METRIC_LABELS = {
    "test_accuracy": "test accuracy",
    "test_token_accuracy": "test accuracy per token",
    "log_ppl": "test log perplexity (nats/token)",
    "train_accuracy": "training accuracy",
    "bits_per_param": "bits per trainable parameter",
}
# Where a metric's values can lie: no spread band or error bar is drawn past them.
ACCURACY_BOUNDS = (0.0, 1.0)


class SeriesStyle(TypedDict):
    """matplotlib's keywords for one series."""

    color: str
    marker: str
    linestyle: str


def series_style(name: str, index: int) -> SeriesStyle:
    """The style of the series ``name``, the ``index``-th drawn: a model's own wherever it is
    plotted, else the ``index``-th of the others."""
    colour, marker, dashes = MODEL_STYLES.get(name) or OTHER_STYLES[index % len(OTHER_STYLES)]
    return {"color": colour, "marker": marker, "linestyle": dashes}


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def legend_below(ax: Any, entries: int) -> None:
    """The legend under the axes, in up to three columns, off the data (``save`` keeps it in
    the figure's bounds)."""
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.3),
        ncol=min(3, max(1, entries)),
        frameon=False,
        handlelength=2.4,
    )


def dodged(x: Sequence[float], index: int, count: int, log_x: bool) -> list[float]:
    """``x`` moved aside by a small step per series (``index`` of ``count``), so that series
    on the same values (two models at 1.0) stay visible beside each other."""
    if count < 2 or len(x) < 2:
        return list(x)
    shift = 0.012 * (index - (count - 1) / 2)
    if log_x:
        return [v * (max(x) / min(x)) ** shift for v in x]
    return [v + shift * (max(x) - min(x)) for v in x]


def clipped_band(
    means: Sequence[float], stds: Sequence[float], bounds: tuple[float, float] | None
) -> tuple[list[float], list[float]]:
    """The band of one std below and above each mean, cut at ``bounds`` (a metric's range)."""
    low, high = bounds or (-math.inf, math.inf)
    below = [max(low, m - s) for m, s in zip(means, stds, strict=True)]
    above = [min(high, m + s) for m, s in zip(means, stds, strict=True)]
    return below, above


def clipped_errors(
    means: Sequence[float], stds: Sequence[float], bounds: tuple[float, float] | None
) -> list[list[float]]:
    """Error bars of one std below and above each mean, cut at ``bounds``."""
    below, above = clipped_band(means, stds, bounds)
    return [
        [m - b for m, b in zip(means, below, strict=True)],
        [a - m for m, a in zip(means, above, strict=True)],
    ]


def pyplot():
    """matplotlib's pyplot on the Agg backend: figures go to files, no display is needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def styled() -> Iterator[Any]:
    """pyplot under the house style, for the figures drawn inside."""
    plt = pyplot()
    with plt.style.context(["tableau-colorblind10", STYLE]):
        yield plt


def save(fig: Any, path: Path) -> None:
    """``path`` (a PNG) and a PDF beside it, byte-identical for the same figure (no creation
    date in the PDF), then the figure closed; cut to what is drawn, a legend below the axes
    included."""
    make_dir(path.parent)
    tight = {"bbox_inches": "tight", "pad_inches": 0.03}
    fig.savefig(path, metadata={"Software": None}, **tight)
    fig.savefig(
        path.with_suffix(".pdf"), metadata={"CreationDate": None, "Producer": None}, **tight
    )
    pyplot().close(fig)


# Characters of a title line at one column's width in the house style's 8 pt.
TITLE_WIDTH = 50


def fitted(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` broken into lines of at most ``width`` characters (default: one column's),
    so no figure clips its title."""
    return "\n".join(textwrap.wrap(title, width))


def line_plot(
    path: Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[Sequence[float]]],
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    log_x: bool = False,
    log_y: bool = False,
    bounds: tuple[float, float] | None = None,
) -> None:
    """One line per series with its mean over seeds and an error bar of one std (cut at the
    metric's ``bounds``), each series in its own style and moved a little aside (``dodged``)."""
    with styled() as plt:
        fig, ax = plt.subplots(figsize=(COLUMN, 2.6))
        for index, (name, per_x) in enumerate(series.items()):
            means = [statistics.fmean(values) for values in per_x]
            stds = [statistics.stdev(values) if len(values) > 1 else 0.0 for values in per_x]
            ax.errorbar(
                dodged(x, index, len(series), log_x),
                means,
                yerr=clipped_errors(means, stds, bounds),
                markersize=3.5,
                capsize=2,
                label=name,
                **series_style(name, index),
            )
        ax.set(title=fitted(title), xlabel=xlabel, ylabel=ylabel)
        if log_x:
            ax.set_xscale("log")
            ax.set_xticks(list(x), [f"{v:g}" for v in x])  # the measured points, not 3x10^1
            ax.minorticks_off()
        if log_y:
            ax.set_yscale("log")
        legend_below(ax, len(series))
        fig.tight_layout()
        save(fig, path)


def bar_plot(
    path: Path,
    values: Mapping[str, Sequence[float]],
    title: str,
    ylabel: str,
    hatched: Mapping[str, str] | None = None,
) -> None:
    """One bar per name, in its model's colour: the mean over seeds with an error bar of one
    std. ``hatched`` maps names to a label: those bars are hatched and the label is their legend
    entry (the rows beyond the paper, so that a reader tells them from its own)."""
    hatched = hatched or {}
    with styled() as plt:
        fig, ax = plt.subplots(figsize=(COLUMN, 2.4))
        names = list(values)
        means = [statistics.fmean(values[name]) for name in names]
        stds = [statistics.stdev(values[n]) if len(values[n]) > 1 else 0.0 for n in names]
        colours = [series_style(name, i)["color"] for i, name in enumerate(names)]
        bars = ax.bar(names, means, yerr=stds, capsize=3, color=colours)
        labelled: set[str] = set()
        for bar, name in zip(bars, names, strict=True):
            if name in hatched:
                bar.set(hatch="//", edgecolor="white")
                if hatched[name] not in labelled:  # one legend entry per label
                    bar.set_label(hatched[name])
                    labelled.add(hatched[name])
        if hatched:
            legend_below(ax, len(set(hatched.values())))
        ax.set(title=fitted(title), xlabel="model", ylabel=ylabel)
        ax.grid(axis="x", visible=False)
        fig.tight_layout()
        save(fig, path)
