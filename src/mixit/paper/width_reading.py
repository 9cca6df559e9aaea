"""The width report's reading (``reproduce width``, docs/width.md): per claim the width
question turns on, whether its verdict moves from the smallest width to the largest, and
which way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mixit.paper import table4
from mixit.paper.claims import margin
from mixit.study.litmus import DEFAULT_TOLERANCE, short_of_chance
from mixit.study.measures import mean, mean_std, spread
from mixit.study.text import markdown_table

CONSTRUCTIONS = ("equations", "authors")
DEPTH = 16


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


def _c1_rows(results: Mapping[str, Any]) -> list[list[str]]:
    retrieval = results["retrieval_accuracy"]
    return [
        _series_row(
            "C1",
            f"frozen-qk ({c})",
            "frozen-qk",
            retrieval[f"frozen-qk ({c})"],
            _unlearned_reference(
                retrieval[f"standard ({c})"], results["widths"], results["retrieval_chance"]
            ),
        )
        for c in CONSTRUCTIONS
    ]


def _c8_rows(results: Mapping[str, Any]) -> list[list[str]]:
    return [
        _series_row("C8", f"{series} at depth {DEPTH}", series, per_width)
        for series, per_width in results["depth_accuracy"].items()
    ]


def _c6_rows(results: Mapping[str, Any]) -> list[list[str]]:
    return [_c6_row(results["bits_per_param"], results["memorization_accuracy"], results["widths"])]


# Each claim's rows, read where the results hold its question (``reproduce width-depth`` asks
# one question only).
READINGS = {"retrieval_accuracy": _c1_rows, "depth_accuracy": _c8_rows, "bits_per_param": _c6_rows}


def reading(results: Mapping[str, Any]) -> str:
    """Per claim the width question turns on, whether its verdict moves with width and which
    way (docs/width.md): C1 by Frozen-QK's retrieval accuracy under each construction, C8 by
    the depth-16 accuracies, C6 by its own rule judged at every width; each where the results
    hold its question."""
    rows = [row for key, rows_of in READINGS.items() if key in results for row in rows_of(results)]
    header = ["claim", "series", *(f"n = {w}" for w in results["widths"]), "change", "reading"]
    return markdown_table(header, rows)
