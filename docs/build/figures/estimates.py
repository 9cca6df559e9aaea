"""docs/cost.md: what ``--estimate --target h100`` prices the paper-scale reproduction at."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from mixit.paper.estimate import estimate_reproduction
from mixit.running.launchers import Launch
from mixit.study.experiment import Reproduction


def _paper(jobs: int, overrides: dict[str, Any]) -> dict[str, Any]:
    """``mixit reproduce all --scale paper --estimate --target h100 --jobs JOBS`` with
    ``overrides``, on an empty output (nothing finished counts)."""
    with tempfile.TemporaryDirectory() as out:
        how = Reproduction("paper", out=Path(out), overrides=overrides, launch=Launch(jobs=jobs))
        return estimate_reproduction(["all"], how, "h100")


def paper_h100() -> str:
    """docs/cost.md: the paper-scale reproduction priced for H100s, in fp32 on one GPU and on
    eight, and in bf16, each experiment's share, and the runs that do not fit one GPU."""
    one, eight = _paper(1, {}), _paper(8, {})
    bf16 = _paper(1, {"train.precision": "bf16"})
    parts = sorted(one["experiments"].items(), key=lambda item: -item[1]["train_seconds"])
    shares = ", ".join(
        f"{name} {part['train_seconds']:,.0f} s" for name, part in parts if part["train_seconds"]
    )
    return (
        f"{one['runs_to_train']} distinct runs ({one['seeds']} seeds), "
        f"{one['train_seconds']:,.0f} seconds of training in one job: **about "
        f"{one['wall_seconds'] / 3600:,.0f} H100-hours** (fp32 on TF32 tensor cores), **about "
        f"{eight['wall_seconds'] / 3600:,.0f} hours on 8** (`--jobs 8`, one run per GPU), and "
        f"about {bf16['wall_seconds'] / 3600:,.0f} H100-hours with `train.precision=bf16`. Per "
        f"experiment, in one job: {shares} (runs shared by experiments count in each). "
        f"{len(one['runs_not_fitting'])} runs do not fit one {one['target']} "
        f"({one['memory_gib_device']:,.0f} GiB) in one piece; the largest needs about "
        f"{one['memory_gib_largest_run']:,.0f} GiB."
    )
