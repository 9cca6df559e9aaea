"""The numbers and keys the experiments' reports share: each run's metric by model and seed,
mean ± spread over seeds, seeds in words, and measurements cached under a key of what they
measured (``cached_measurement``)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.io import write_json
from mixit.config.overrides import Setting
from mixit.study.experiment import Overrides, Run, Summaries
from mixit.tasks.base import PLATEAU_KEY


def metric_values(summaries: Summaries, selected: Sequence[Run], metric: str) -> list[float]:
    return [float(summaries[run]["metrics"][metric]) for run in selected]


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values)


def spread(values: Sequence[float]) -> float:
    """The sample std over seeds; 0 for one seed."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """``0.981 ± 0.012`` (sample std over seeds; ± 0 for one seed)."""
    return f"{statistics.fmean(values):.{digits}f} ± {spread(values):.{digits}f}"


def by_model(summaries: Summaries, selected: Sequence[Run], metric: str) -> dict[str, list[float]]:
    """``{model: [value per seed]}`` in the order the runs were listed."""
    table: dict[str, list[float]] = {}
    for run in selected:
        table.setdefault(run.model, []).append(float(summaries[run]["metrics"][metric]))
    return table


def percent(value: float) -> str:
    return f"{100 * value:.2f}%"


def cached_measurement(path: Path, key: Mapping[str, Any], measure: Callable[[], Any]) -> Any:
    """``measure()``, stored in ``path`` with ``key``; reused while the key is unchanged."""
    try:
        stored = json.loads(path.read_text())
        if stored.get("key") == key:
            return stored["value"]
    except (OSError, ValueError, AttributeError):  # none yet, or damaged: measure again
        pass
    value = measure()
    write_json(path, {"key": dict(key), "value": value})
    return value


def seeds_label(seeds: range) -> str:
    """``0-2``: a set of seeds as ``Claim.by_seeds`` names it."""
    return f"{seeds.start}-{seeds.stop - 1}"


def seeds_text(seeds: range) -> str:
    """``3 seeds`` from 0, ``3 seeds (100-102)`` from elsewhere."""
    named = f" ({seeds.start}-{seeds.stop - 1})" if seeds.start else ""
    return f"{len(seeds)} seed{'s' * (len(seeds) != 1)}{named}"


def seeds_note(seeds: range) -> str:
    return f"Mean ± standard deviation over {seeds_text(seeds)}."


def measured_overrides(overrides: Overrides) -> dict[str, Setting]:
    """The overrides a measurement of models takes: the ``model.*`` keys (the construction
    among them) and the ``train.*`` keys (precision, compilation). The ``task.*`` keys name
    settings of the tasks the runs train, and a measurement's data is its own."""
    return {k: v for k, v in overrides.items() if k.startswith(("model.", "train."))}


def measurement_key(
    scale: str, seeds: range, overrides: Overrides, **settings: Any
) -> dict[str, Any]:
    """A cached measurement's key: the scale, the seeds, the experiment's own ``settings`` and
    the overrides it measured under where there are any (a key without them is a
    measurement of the scale's own models)."""
    key = {"scale": scale, "seeds": seeds_key(seeds), **settings}
    measured = measured_overrides(overrides)
    measured.pop(PLATEAU_KEY, None)  # when a run stops changes no model measured
    return key | ({"overrides": measured} if measured else {})


def seeds_key(seeds: range) -> int | list[int]:
    """``seeds`` in a cached measurement's key: the count when they start at 0 (as every
    measurement did before ``reproduce --seed``), else the seeds themselves."""
    return len(seeds) if seeds.start == 0 else list(seeds)
