"""A reproduction's runs under the tuned presets (``mixit.tuning.presets``, docs/tuning.md).

A group is named in the file by its task, its model and the overrides of the first run that
planned it (its experiment's setting). A run finds its group by identity: the config the run
resolves to at the scale, on seed 0, without the user's settings, equals the group's. So two
experiments that plan the same run under different overrides (figure 2's 8-pair runs are
table 1's) take the same choice, and a run no group covers is an error, never a silent
fallback to the task preset (docs/tuning.md, rule 9).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mixit.common.errors import UsageError
from mixit.config.overrides import with_settings
from mixit.config.schema import RunConfig
from mixit.study.experiment import Run
from mixit.tuning.presets import GroupKey, tuned_presets, tuned_rows
from mixit.tuning.rules import capped_record


def identity(run: Run, scale: str) -> str:
    """What a run is, whatever seed, user setting or ablation flip it is planned with: its
    resolved config at ``scale`` on seed 0, as canonical JSON."""
    config = Run(run.task, run.model, 0, run.overrides).config(scale)
    return json.dumps(config.result_dict(), sort_keys=True)


def rows_by_identity(rows: Iterable[Mapping[str, Any]], scale: str) -> dict[str, Mapping[str, Any]]:
    """Tuning records (a presets file's groups, ``OUT/tuning.json``'s rows) under the
    ``identity`` of the runs each covers."""
    return {
        identity(Run(row["task"], row["model"], 0, tuple(row["run_overrides"].items())), scale): row
        for row in rows
    }


def capped_groups(scale: str) -> set[str]:
    """The identities (``identity``) of the scale's groups whose budget rule reached the cap
    still rising (``tuning_rules.capped_record``)."""
    return set(rows_by_identity(filter(capped_record, tuned_rows(scale)), scale))


def choices_by_identity(
    chosen: Mapping[GroupKey, Mapping[str, Any]], scale: str
) -> dict[str, Mapping[str, Any]]:
    """Each group's choice under the ``identity`` of the runs it covers."""
    return {
        identity(Run(task, model, 0, tuple(json.loads(overrides).items())), scale): choice
        for (task, model, overrides), choice in chosen.items()
    }


def uncovered(runs: Iterable[Run], scale: str) -> set[Run]:
    """The runs of ``runs`` that no group of the scale's tuned presets covers."""
    covered = choices_by_identity(tuned_presets(scale), scale)
    return {run for run in runs if identity(run, scale) not in covered}


def with_choices(
    configs: Mapping[Run, RunConfig],
    chosen: Mapping[GroupKey, Mapping[str, Any]],
    scale: str,
    kept: Mapping[Run, Iterable[str]] | None = None,
) -> dict[Run, RunConfig]:
    """``configs`` with each run's group's choice applied, except the keys ``kept[run]``
    names (settings the user asked for, which win). A run finds its group by ``identity``;
    one that no group covers stops the plan before anything trains (``UsageError`` naming
    it), since training it at the task preset would judge it untuned without a word."""
    by_identity = choices_by_identity(chosen, scale)
    result = {}
    for run, config in configs.items():
        found = by_identity.get(identity(run, scale))
        if found is None:
            setting = ", ".join(f"{k}={v}" for k, v in run.overrides) or "the scale's preset"
            raise UsageError(
                f"the tuned presets have no choice for {run.task} {run.model} ({setting}); "
                "tune it (mixit presets tune) or train at the task presets' rates (--no-tune)"
            )
        choice = dict(found)
        for key in (kept or {}).get(run, ()):
            choice.pop(key, None)
        result[run] = with_settings(config, choice)
    return result
