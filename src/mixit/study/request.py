"""What one comparison is asked for, checked whole before anything is priced or trains.

The command line parses its options and hands them over in one call (``plan_compare``), which
returns a ``CompareRequest``: the study with its models fixed (``--per-layer``'s placements at
the task's depth), the axis parsed and every value of it checked, and the options that may
not go together refused, each with one line that says which and why. Every later step
(estimate, draws, axis, one comparison) reads the request and checks nothing again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from mixit.common.errors import UsageError
from mixit.config.overrides import Settings
from mixit.models.variants import VARIANTS
from mixit.study.axis import Axis, parse_axis
from mixit.study.compare import settings_to_tune
from mixit.study.draws import FROZEN_KEY, check_frozen_seed, keeps_a_draw
from mixit.study.per_layer import REFERENCE, per_layer_models
from mixit.study.plan import Study
from mixit.training.resolve import resolve_config


@dataclass(frozen=True)
class CompareRequest:
    """``study`` with its models fixed; ``axis`` parsed (None: one value); ``per_layer`` the
    variant placed layer by layer and ``depth`` the task's layers it is placed in; ``draws``
    the frozen draws crossed with the seeds (None: the overrides' one); ``explain`` whether a
    shortfall is explained by ablation."""

    study: Study
    axis: Axis | None = None
    per_layer: str | None = None
    depth: int | None = None
    draws: int | None = None
    explain: bool = False


def check_tuning_along(axis: str | None, tunes: Sequence[str]) -> None:
    """``--axis train.lr`` with a tuning of the rate: the tuning would overwrite each value."""
    key = (axis or "").split("=", 1)[0].strip()
    if key == "train.lr" and "lr" in tunes:
        raise UsageError(
            "--axis train.lr sets the learning rate that the tuning would choose; add "
            "--no-tune, or walk another key"
        )


def check_draws(draws: int, models: Sequence[str], overrides: Settings, along: bool) -> None:
    """``--frozen-draws`` crosses draws with seeds on one comparison (``along``: an axis or
    placements asked beside it) that has a model keeping a draw, and sets the frozen seed
    itself."""
    if draws < 2:
        raise UsageError(f"--frozen-draws {draws}: give 2 or more draws to compare")
    if along:
        raise UsageError("--frozen-draws reads one comparison: leave out --axis and --per-layer")
    if FROZEN_KEY in overrides:
        raise UsageError(f"--frozen-draws sets {FROZEN_KEY} for each draw: leave out the override")
    if not any(keeps_a_draw(model) for model in models):
        raise UsageError(
            f"--frozen-draws: none of {', '.join(models)} keeps a random draw untrained "
            "(mixit, frozen-qk, frozen-mlp and random do)"
        )


def placed_models(study: Study, variant: str) -> tuple[int, list[str]]:
    """``--per-layer VARIANT``: the task's depth at the study's preset and settings, and the
    models that place VARIANT layer by layer in it."""
    config = resolve_config(study.task, REFERENCE, study.preset, study.seed, dict(study.overrides))
    others = [name for name in VARIANTS if name != REFERENCE]
    if variant not in others:
        raise UsageError(f"--per-layer {variant}: name one of {', '.join(others)}")
    return config.model.n_layer, per_layer_models(variant, config.model.n_layer)


def plan_compare(
    study: Study,
    *,
    axis: str | None = None,
    per_layer: str | None = None,
    draws: int | None = None,
    explain: bool = False,
) -> CompareRequest:
    """The comparison ``study`` names with these options, or a UsageError naming the first
    option that is wrong or that may not go with another."""
    if per_layer is not None and (study.models is not None or axis is not None):
        raise UsageError("--per-layer chooses its own models; leave out --models and --axis")
    depth, models = None, list(study.spectrum)
    if per_layer is not None:
        depth, models = placed_models(study, per_layer)
    check_tuning_along(axis, settings_to_tune(study.tune, study.overrides))
    if draws is not None:
        check_draws(draws, models, study.overrides, axis is not None or per_layer is not None)
    check_frozen_seed(models, study.overrides)
    if explain and (axis is not None or draws is not None):
        raise UsageError("--explain reads one comparison: leave out --axis and --frozen-draws")
    parsed = None if axis is None else parse_axis(axis, study.task, study.preset, study.overrides)
    fixed = dataclasses.replace(study, models=tuple(models))
    return CompareRequest(fixed, parsed, per_layer, depth, draws, explain)
