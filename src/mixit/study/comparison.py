"""What ``compare.json`` and ``axis.json`` hold, typed with the files' keys: a comparison's
table rows (one per model, over its seeds), its litmus reading, what tuning chose, and, with
``--seeds auto``, where the seeds stopped; an axis's comparison at each value, where each model
breaks and its score over the axis. ``mixit.compare`` returns the first as this dict, as the
public contract says."""

from __future__ import annotations

from typing import Any, Required

# typing_extensions, not typing: pydantic reads TypedDicts of Python 3.11 only from there
# (common.io.read_record checks a stored file against these shapes).
from typing_extensions import TypedDict

from mixit.config.overrides import Setting


class TableRow(TypedDict, total=False):
    """One model's row: its headline metric per seed (``values``), their mean and std, its
    size and time, how far each seed trained and why it stopped, whether each was still rising
    at its end, and for frozen attention its logit spread at initialisation."""

    model: Required[str]
    mean: Required[float]
    std: float
    values: list[float]
    params_trainable: int
    train_seconds: float
    steps_run: list[int]
    stopped: list[str]
    # The step each seed's value was read at: its best held-out point (``read_at_best``).
    read_at: list[int]
    rising: list[bool]
    logit_spread_at_init: float


class LitmusResult(TypedDict, total=False):
    """The reading against the standard model: each variant's (``LitmusReading.to_json``),
    or why the reference is none (``no_reference``) and what to try ``next``; where even the
    random transformer matches, what would make the task discriminate."""

    tolerance: float
    rows: list[dict[str, Any]]
    no_reference: list[str]
    next: str
    does_not_discriminate: str


class SeedsAuto(TypedDict):
    """``--seeds auto``: the seeds it started with, the most it would train, and the models
    their intervals still left undecided where it stopped."""

    start: int
    maximum: int
    undecided: list[str]


class Doubling(TypedDict):
    """One doubling of a family's budget (``--extend``): the budget before and after, the models
    whose readings a run still rising left open, and the training seconds the new runs took."""

    steps: int
    to: int
    open: list[str]
    train_seconds: float


class Extension(TypedDict):
    """What ``--extend`` spent on a comparison: the budget its verdict runs reached, each
    doubling, why it stopped (``decided``, ``cap``, ``max_hours``) and the readings left open."""

    steps: int
    cap: int
    doublings: list[Doubling]
    stopped: str
    open: list[str]


class ComparisonResult(TypedDict, total=False):
    task: str
    metric: str
    higher_is_better: Required[bool]
    preset: str
    seeds: list[int]
    overrides: dict[str, Setting]
    chance: float | None
    rows: Required[list[TableRow]]
    evaluated_on: str
    tuned: dict[str, dict[str, Any]]
    litmus: LitmusResult
    seeds_auto: SeedsAuto
    extension: Extension


class BreakPoint(TypedDict):
    """Where a model stops matching: ``outcome`` holds, breaks or inconclusive, ``at`` the
    value (None when it holds), ``why`` the reading there."""

    model: str
    outcome: str
    at: Any
    why: str


class AxisScore(TypedDict):
    """A model's mean score relative to the reference over the axis, and its seed spread."""

    model: str
    relative: float
    spread: float | None


class AxisPoint(TypedDict):
    """One value of an axis and its comparison there."""

    value: Any
    compare: ComparisonResult


class AxisResult(TypedDict, total=False):
    """axis.json: the knob, its values, each value's comparison, the value where the
    reference stopped learning (None: none), each model's break point and score, the values the
    task refused, and for ``--axis auto`` where the models separated."""

    key: Required[str]
    values: Required[list[Any]]
    points: Required[list[AxisPoint]]
    stopped_at: Required[Any]
    break_points: Required[list[BreakPoint]]
    scores: Required[list[AxisScore]]
    left_out: list[str]
    separated_at: Any
