"""The tuned presets (docs/tuning.md): per group of runs a reproduction plans at a scale, the
learning rate, steps and initialisation the tuning protocol chose, with the validation
evidence, as ``tools/tune_presets.py`` wrote them to ``tuned/SCALE.json``. ``reproduce`` trains
under them by default, as the paper trains each architecture at its own rate (its Table 9).

A group is named by its task, its model and the run's own overrides (its experiment's
setting), so that the choice follows the run whatever seeds are asked for.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mixit.config import RunConfig
from mixit.errors import UsageError
from mixit.experiments.base import Run
from mixit.overrides import apply_overrides

TUNED = Path(__file__).with_name("tuned")

GroupKey = tuple[str, str, str]


def preset_path(scale: str) -> Path:
    return TUNED / f"{scale}.json"


def group_key(task: str, model: str, run_overrides: Mapping[str, Any]) -> GroupKey:
    return task, model, json.dumps(dict(run_overrides), sort_keys=True)


def choices(rows: Iterable[Mapping[str, Any]]) -> dict[GroupKey, dict[str, Any]]:
    """``{group: overrides}`` from tuning records (``OUT/tuning.json``'s rows)."""
    return {
        group_key(row["task"], row["model"], row["run_overrides"]): dict(row["overrides"])
        for row in rows
    }


def tuned_presets(scale: str) -> dict[GroupKey, dict[str, Any]]:
    """The scale's tuned choices; {} for a scale that has none (``paper``: the paper's own
    presets already carry its Table 9 rates where it gives them)."""
    path = preset_path(scale)
    if not path.exists():
        return {}
    try:
        return choices(json.loads(path.read_text())["groups"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"{path}: the tuned presets are damaged; reinstall mixit") from None


def with_choices(
    configs: Mapping[Run, RunConfig],
    chosen: Mapping[GroupKey, Mapping[str, Any]],
    kept: Mapping[Run, Iterable[str]] | None = None,
) -> dict[Run, RunConfig]:
    """``configs`` with each run's group's choice applied, except the keys ``kept[run]``
    names (settings the user asked for, which win); a run without a choice keeps its own."""
    result = {}
    for run, config in configs.items():
        choice = dict(chosen.get(group_key(run.task, run.model, dict(run.overrides)), {}))
        for key in (kept or {}).get(run, ()):
            choice.pop(key, None)
        result[run] = copy.deepcopy(config)
        apply_overrides(result[run], choice)
    return result
