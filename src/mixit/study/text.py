"""Numbers and tables as the reports print them: a duration in the unit that reads best, a
markdown table, how far a number of ours is from the paper's."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table of ``header`` and ``rows``, each cell as ``str`` gives it."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def name_width(names: Iterable[str], least: int = 12) -> int:
    """The width of a plain-text table's name column: ``least``, or the longest name's."""
    return max([least, *(len(name) for name in names)])


def duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``33.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:,.1f} h"


# How the learning rates of the runs a figure shows were chosen ("tuned presets", "untuned"),
# for its title: a reproduction sets it around each report (``trained_as``), so that every
# report's figures say it without each report being told; '' outside one.
_TRAINED_AS: ContextVar[str] = ContextVar("trained_as", default="")


@contextmanager
def trained_as(label: str) -> Iterator[None]:
    """Figures titled by ``ran`` inside say ``label``: how their runs were trained."""
    token = _TRAINED_AS.set(label)
    try:
        yield
    finally:
        _TRAINED_AS.reset(token)


def ran(scale: str, seeds: range) -> str:
    """What a figure shows, for its title: ``tiny, seeds 100-102`` and, inside ``trained_as``,
    how it was trained (``tiny, seeds 100-102, tuned presets``)."""
    last = seeds.stop - 1
    shown = f"{scale}, seed{'s' if len(seeds) > 1 else ''} {seeds.start}" + (
        f"-{last}" if len(seeds) > 1 else ""
    )
    return f"{shown}, {_TRAINED_AS.get()}" if _TRAINED_AS.get() else shown


# A number of ours more than this many times above or below the paper's is said to differ.
PAPER_FACTOR = 3.0


def against_paper(ours: float, paper: float, factor: float = PAPER_FACTOR) -> str:
    """How far ``ours`` is from the paper's number: "within 3×", "100× smaller", "4.2× larger",
    "0 (the paper: 0.00088)" or "the other sign".

    >>> against_paper(0.00001, 0.001)
    '100× smaller'
    >>> against_paper(0.0025, 0.001)
    'within 3×'
    """
    if ours == 0 or paper == 0:
        return f"within {factor:g}×" if ours == paper else f"{ours:g} (the paper: {paper:g})"
    if (ours > 0) != (paper > 0):
        return "the other sign"
    ratio = ours / paper
    if 1 / factor <= ratio <= factor:
        return f"within {factor:g}×"
    far = ratio if ratio > 1 else 1 / ratio
    shown = f"{far:,.0f}" if far >= 10 else f"{far:.1f}"
    return f"{shown}× {'larger' if ratio > 1 else 'smaller'}"


# An accuracy of ours more than this many points (of 100) from the paper's is said to differ.
PAPER_POINTS = 10.0


def points_from_paper(ours: float, paper: float, points: float = PAPER_POINTS) -> str:
    """How far an accuracy ``ours`` (a fraction) is from the paper's: "within 10 points",
    "62.5 points below" or "12.0 points above".

    >>> points_from_paper(0.30, 0.925)
    '62.5 points below'
    """
    gap = 100 * (ours - paper)
    if abs(gap) <= points:
        return f"within {points:g} points"
    return f"{abs(gap):.1f} points {'above' if gap > 0 else 'below'}"


# A log perplexity of ours more than this many nats from the paper's is said to differ.
PAPER_NATS = 0.05


def nats_from_paper(ours: float, paper: float | None, nats: float = PAPER_NATS) -> str:
    """How far a log perplexity is from the paper's (none: "-"): "within 0.05 nats",
    "0.42 nats above"."""
    if paper is None:
        return "-"
    gap = ours - paper
    if abs(gap) <= nats:
        return f"within {nats:g} nats"
    return f"{abs(gap):.2f} nats {'above' if gap > 0 else 'below'}"
