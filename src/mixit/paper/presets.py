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
from pathlib import Path

from mixit.common.io import write_json
from mixit.paper.runner import plan_reproduction, tune_plan
from mixit.running.launchers import Launch
from mixit.study.experiment import Reproduction
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


def tune_presets(scale: str, out: Path, jobs: int = 1, checkpoint_every: int = 0) -> int:
    """Tune every group ``reproduce all`` plans at ``scale`` into ``out`` and write the scale's
    presets file; the groups tuned. ``checkpoint_every`` is an execution setting (a stopped
    tuning's long trials go on from there), which changes no result or run directory."""
    how = Reproduction(
        scale,
        out=out,
        overrides={"train.checkpoint_every": checkpoint_every},
        progress=True,
        launch=Launch(jobs=jobs),
        presets=False,
    )
    # The untuned presets: the grid centres on each preset's own rate.
    experiments, configs = plan_reproduction(["all"], how)
    start = time.perf_counter()
    tune_plan(experiments, configs, how)
    seconds = time.perf_counter() - start
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    # The task presets' own settings, beside each choice: the grid's centre.
    untuned = {
        group_key(run.task, run.model, dict(run.overrides)): config.train
        for run, config in configs.items()
    }
    groups = []
    for row in json.loads((out / "tuning.json").read_text()):
        train = untuned[group_key(row["task"], row["model"], row["run_overrides"])]
        kept = {key: value for key, value in row.items() if key not in LEFT_OUT}
        groups.append(kept | {"preset": {"train.lr": train.lr, "train.steps": train.steps}})
    write_json(
        preset_path(scale),
        {
            "scale": scale,
            "protocol": "docs/tuning.md",
            "rules": RULES,
            "tuned_at_commit": commit,
            "tuning_wall_seconds": round(seconds),
            "trials_train_seconds": round(trials_train_seconds(out / "runs", groups[0]["seed"])),
            "jobs": jobs,
            "groups": groups,
        },
    )
    print(f"{len(groups)} groups tuned in {seconds / 60:.1f} min: {preset_path(scale)}")
    return len(groups)
