"""Figures for the reports (matplotlib, written to PNG without a display)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from mixit.common.io import make_dir


def pyplot():
    """matplotlib's pyplot on the Agg backend: figures go to files, no display is needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def line_plot(
    path: Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[Sequence[float]]],
    title: str,
    xlabel: str,
    ylabel: str,
    log_x: bool = False,
    log_y: bool = False,
) -> None:
    """One line per series with its mean over seeds and an error bar of one std."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, per_x in series.items():
        means = [statistics.fmean(values) for values in per_x]
        stds = [statistics.stdev(values) if len(values) > 1 else 0.0 for values in per_x]
        ax.errorbar(x, means, yerr=stds, marker="o", capsize=3, label=name)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if log_x:
        ax.set_xscale("log")
        ax.set_xticks(list(x), [f"{v:g}" for v in x])  # the measured points, not 3x10^1
        ax.minorticks_off()
    if log_y:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    make_dir(path.parent)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def bar_plot(path: Path, values: Mapping[str, Sequence[float]], title: str, ylabel: str) -> None:
    """One bar per name: the mean over seeds with an error bar of one std."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    names = list(values)
    means = [statistics.fmean(values[name]) for name in names]
    stds = [statistics.stdev(values[name]) if len(values[name]) > 1 else 0.0 for name in names]
    ax.bar(names, means, yerr=stds, capsize=4, color="tab:blue")
    ax.set(title=title, ylabel=ylabel)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    make_dir(path.parent)
    fig.savefig(path, dpi=120)
    plt.close(fig)
