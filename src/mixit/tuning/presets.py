"""The tuned presets (docs/tuning.md, "Tuned presets"): per group of runs a reproduction plans
at a scale, the learning rate, steps and initialisation the tuning protocol chose, with the
validation evidence, as ``mixit presets tune`` wrote them to ``tuned/SCALE.json``.
``reproduce`` trains under them by default, as the paper trains each architecture at its own
rate (its Table 9); ``mixit.study.tuned_presets`` finds each planned run's group.

A group is named in the file by its task, its model and the overrides of the first run that
planned it (its experiment's setting).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.config.overrides import Setting, Settings

TUNED = Path(__file__).with_name("tuned")

GroupKey = tuple[str, str, str]


def preset_path(scale: str) -> Path:
    return TUNED / f"{scale}.json"


def group_key(task: str, model: str, run_overrides: Settings) -> GroupKey:
    return task, model, json.dumps(dict(run_overrides), sort_keys=True)


def presets_label(scale: str) -> str:
    """How claims.json names the scale's tuned presets: the file, and the date of the tuning
    rules they were tuned under where they record it (none: the rules before 2026-12-01)."""
    path = preset_path(scale)
    try:
        rules = json.loads(path.read_text()).get("rules")
    except (OSError, ValueError, AttributeError):
        rules = None
    return f"tuned ({path.name}, rules of {rules})" if rules else f"tuned ({path.name})"


def choices(rows: Iterable[Mapping[str, Any]]) -> dict[GroupKey, dict[str, Setting]]:
    """``{group: overrides}`` from tuning records (``OUT/tuning.json``'s rows)."""
    return {
        group_key(row["task"], row["model"], row["run_overrides"]): dict(row["overrides"])
        for row in rows
    }


def tuned_presets(scale: str) -> dict[GroupKey, dict[str, Setting]]:
    """The scale's tuned choices; {} for a scale that has none (``paper``: the paper's own
    presets already carry its Table 9 rates where it gives them)."""
    path = preset_path(scale)
    if not path.exists():
        return {}
    try:
        return choices(json.loads(path.read_text())["groups"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(f"{path}: the tuned presets are damaged; reinstall mixit") from None


def tuned_rows(scale: str) -> list[dict[str, Any]]:
    """The scale's tuned groups as the file holds them; [] for a scale that has none."""
    path = preset_path(scale)
    return json.loads(path.read_text())["groups"] if path.exists() else []
