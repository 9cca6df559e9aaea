"""Figures for the reports (matplotlib, written without a display), in one style: sized to read
at one column of a paper (``COLUMN`` inches wide, ``PAGE`` for wide grids), colour-blind-safe
colours (the ``tableau-colorblind10`` cycle, the ``cividis`` map), and a vector PDF beside every
PNG (``save``). Every figure has a title and labelled axes."""

from __future__ import annotations

import statistics
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
    date in the PDF), then the figure closed."""
    make_dir(path.parent)
    fig.savefig(path, metadata={"Software": None})
    fig.savefig(path.with_suffix(".pdf"), metadata={"CreationDate": None, "Producer": None})
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
) -> None:
    """One line per series with its mean over seeds and an error bar of one std."""
    with styled() as plt:
        fig, ax = plt.subplots(figsize=(COLUMN, 2.6))
        for name, per_x in series.items():
            means = [statistics.fmean(values) for values in per_x]
            stds = [statistics.stdev(values) if len(values) > 1 else 0.0 for values in per_x]
            ax.errorbar(x, means, yerr=stds, marker="o", markersize=3, capsize=2, label=name)
        ax.set(title=fitted(title), xlabel=xlabel, ylabel=ylabel)
        if log_x:
            ax.set_xscale("log")
            ax.set_xticks(list(x), [f"{v:g}" for v in x])  # the measured points, not 3x10^1
            ax.minorticks_off()
        if log_y:
            ax.set_yscale("log")
        ax.legend()
        fig.tight_layout()
        save(fig, path)


def bar_plot(path: Path, values: Mapping[str, Sequence[float]], title: str, ylabel: str) -> None:
    """One bar per name: the mean over seeds with an error bar of one std."""
    with styled() as plt:
        fig, ax = plt.subplots(figsize=(COLUMN, 2.4))
        names = list(values)
        means = [statistics.fmean(values[name]) for name in names]
        stds = [statistics.stdev(values[n]) if len(values[n]) > 1 else 0.0 for n in names]
        ax.bar(names, means, yerr=stds, capsize=3)
        ax.set(title=fitted(title), xlabel="model", ylabel=ylabel)
        ax.grid(axis="x", visible=False)
        fig.tight_layout()
        save(fig, path)
