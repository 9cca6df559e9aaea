"""The tuned presets (docs/tuning.md, "Tuned presets"): every group of runs ``reproduce all``
plans at a scale, tuned once under the protocol, and the choices with their validation evidence
written to the file ``reproduce`` reads by default (``mixit/tuning/tuned/SCALE.json``,
``mixit presets tune``).

Only the tuning runs train here, on the tuning seed: no verdict run, so the file can be
committed before any verdict that uses it is seen. The runs stay in ``out``; a later
``mixit reproduce all --scale SCALE --out`` the same folder trains the verdict runs beside them.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.config.schema import RunConfig
from mixit.paper.runner import plan_reproduction, tune_plan
from mixit.running.launchers import Launch
from mixit.study.experiment import Experiment, Reproduction, Run
from mixit.study.tuned_presets import uncovered
from mixit.tuning.presets import group_key, preset_path
from mixit.tuning.rules import RULES

# What the file keeps of each group's record: the choice and its evidence, not the local
# paths of the runs that gave it.
LEFT_OUT = ("run_dir",)


def trials_train_seconds(runs_dir: Path, seed: int) -> float:
    """The training seconds each tuning trial in ``runs_dir`` logged at its last evaluation,
    summed: the tuning's cost over every call it took, where a stopped tuning's wall time is
    lost with the call (a trial cut off and trained again from step 0 counts once)."""
    total = 0.0
    for metrics in runs_dir.glob(f"*-s{seed}-*/metrics.jsonl"):
        lines = metrics.read_text().splitlines()
        total += json.loads(lines[-1]).get("train_seconds", 0.0) if lines else 0.0
    return total


def preset_rows(out: Path, configs: Mapping[Run, RunConfig]) -> list[dict[str, Any]]:
    """The groups ``OUT/tuning.json`` holds, as the presets file keeps them: each record
    without its local paths, beside the task preset's own rate and steps (the grid's centre)."""
    untuned = {
        group_key(run.task, run.model, dict(run.overrides)): config.train
        for run, config in configs.items()
    }
    groups = []
    for row in json.loads((out / "tuning.json").read_text()):
        train = untuned[group_key(row["task"], row["model"], row["run_overrides"])]
        kept = {key: value for key, value in row.items() if key not in LEFT_OUT}
        groups.append(kept | {"preset": {"train.lr": train.lr, "train.steps": train.steps}})
    return groups


def commit_here() -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def untuned_plan(
    scale: str, out: Path, jobs: int, checkpoint_every: int
) -> tuple[Reproduction, list[Experiment], dict[Run, RunConfig]]:
    """What ``reproduce all`` plans at ``scale`` at the task presets' own rates (the grid
    centres on each), and how its tuning trains into ``out``."""
    how = Reproduction(
        scale,
        out=out,
        overrides={"train.checkpoint_every": checkpoint_every},
        progress=True,
        launch=Launch(jobs=jobs),
        presets=False,
    )
    experiments, configs = plan_reproduction(["all"], how)
    return how, experiments, configs


def tune_presets(scale: str, out: Path, jobs: int = 1, checkpoint_every: int = 0) -> int:
    """Tune every group ``reproduce all`` plans at ``scale`` into ``out`` and write the scale's
    presets file; the groups tuned. ``checkpoint_every`` is an execution setting (a stopped
    tuning's long trials go on from there), which changes no result or run directory."""
    how, experiments, configs = untuned_plan(scale, out, jobs, checkpoint_every)
    start = time.perf_counter()
    tune_plan(experiments, configs, how)
    seconds = time.perf_counter() - start
    groups = preset_rows(out, configs)
    write_json(
        preset_path(scale),
        {
            "scale": scale,
            "protocol": "docs/tuning.md",
            "rules": RULES,
            "tuned_at_commit": commit_here(),
            "tuning_wall_seconds": round(seconds),
            "trials_train_seconds": round(trials_train_seconds(out / "runs", groups[0]["seed"])),
            "jobs": jobs,
            "groups": groups,
        },
    )
    print(f"{len(groups)} groups tuned in {seconds / 60:.1f} min: {preset_path(scale)}")
    return len(groups)


def tune_missing(scale: str, out: Path, jobs: int = 1, checkpoint_every: int = 0) -> int:
    """Tune only the groups ``reproduce all`` plans at ``scale`` that the presets file has no
    choice for (a row added since, such as Table 3's Frozen-MLP), each at least at the budget
    its task's groups in the file train (``floors``: one budget per task and setting), and add
    them to the file; every group already there, and the file's own record, stay as they are.
    Each added group says when and at which commit it was tuned. The groups added."""
    if not preset_path(scale).is_file():
        raise UsageError(
            f"{scale} has no tuned presets to add to: tune them all (no --missing-only)"
        )
    how, experiments, configs = untuned_plan(scale, out, jobs, checkpoint_every)
    missing = uncovered(configs, scale)
    if not missing:
        print(f"every group reproduce all plans at {scale} has a choice: {preset_path(scale)}")
        return 0
    stored = json.loads(preset_path(scale).read_text())
    floors = {
        (row["task"], tuple(row["run_overrides"].items())): row["steps"] for row in stored["groups"]
    }
    pending = {run: configs[run] for run in missing}
    start = time.perf_counter()
    tune_plan(experiments, pending, how, floors)
    seconds = time.perf_counter() - start
    added = {
        "rules": RULES,
        "tuned_at_commit": commit_here(),
        "tuning_wall_seconds": round(seconds),
    }
    groups = [row | {"added": added} for row in preset_rows(out, pending)]
    write_json(preset_path(scale), {**stored, "groups": [*stored["groups"], *groups]})
    print(f"{len(groups)} groups added in {seconds / 60:.1f} min: {preset_path(scale)}")
    return len(groups)
