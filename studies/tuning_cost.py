"""What the tuning protocol costs, and what its halving changes in the choice (docs/tuning.md).

On one task, from empty outputs, one after another on this machine:
1. ``compare --no-tune``: the untuned comparison, timed;
2. ``compare --tune lr``: the tuned one, timed (its tuning runs and its verdict runs);
3. the same grid without halving: every rate the halving tried, trained to the whole budget on
   the tuning seed (the halving's runs are resumed, not retrained), and the rate that this
   full grid would choose, beside the halving's.

Writes ``results/tuning-cost/TASK.json``.

    python studies/tuning_cost.py --task dyck --seeds 3
"""

from __future__ import annotations

import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.io import make_dir, write_json
from mixit.study.compare import compare
from mixit.study.plan import Comparison
from mixit.tasks import TASKS
from mixit.tuning.halving import Tuner
from mixit.tuning.rules import Candidate, Trial, candidate_config, tuning_seed, validation_points

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "tuning-cost"


def timed_compare(task: str, seeds: int, out: Path, tune: list[str]) -> tuple[dict, float]:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    result = compare(task, seeds=seeds, out=out, tune=tune, progress=True)
    return result, time.perf_counter() - start


def full_grid(task: str, seeds: int, tuned: dict[str, Any], out: Path) -> tuple[dict, float]:
    """Every rate each model's halving tried, at the whole budget on the tuning seed; the
    best of them per model."""
    plan = Comparison(task, tuple(tuned), "tiny", range(seeds), out, {})
    configs = plan.configs()
    tuner = Tuner(tuning_seed(plan.seeds), out / "runs")
    trials = {}
    for model, record in tuned.items():
        base = configs[model, 0]
        for lr, *_ in validation_points(record):
            exponent = round(2 * math.log10(lr / base.train.lr))
            candidate = Candidate(exponent)
            trials[model, lr] = Trial(candidate, candidate_config(base, candidate, tuner.seed))
    start = time.perf_counter()
    tuner.train_to(list(trials.values()), max(t.config.train.steps for t in trials.values()))
    seconds = time.perf_counter() - start
    chosen = {}
    for model in tuned:
        mine = [t for (m, _), t in trials.items() if m == model]
        best = Tuner.rank(mine)[0]
        chosen[model] = {
            "train.lr": best.rate,
            "scores": [[t.rate, t.score, t.steps_run, t.stopped] for t in mine],
        }
    return chosen, seconds


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="tuning_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="dyck", choices=sorted(TASKS))
    parser.add_argument("--seeds", type=count, default=3)
    parser.add_argument("--out", default="runs/tuning-cost", help="where the runs go")
    args = parser.parse_args(argv)
    out = Path(args.out) / args.task
    untuned, untuned_seconds = timed_compare(args.task, args.seeds, out / "untuned", [])
    tuned, tuned_seconds = timed_compare(args.task, args.seeds, out / "tuned", ["lr"])
    grid, grid_seconds = full_grid(args.task, args.seeds, tuned["tuned"], out / "tuned")
    result = {
        "task": args.task,
        "preset": "tiny",
        "seeds": args.seeds,
        "untuned_seconds": untuned_seconds,
        "tuned_seconds": tuned_seconds,
        "ratio": tuned_seconds / untuned_seconds,
        "full_grid_extra_seconds": grid_seconds,
        "untuned": {row["model"]: row["values"] for row in untuned["rows"]},
        "tuned": {row["model"]: row["values"] for row in tuned["rows"]},
        "chance": tuned["chance"],
        "litmus_untuned": untuned["litmus"],
        "litmus_tuned": tuned["litmus"],
        "halving": {m: r["train.lr"] for m, r in tuned["tuned"].items()},
        "tuning": tuned["tuned"],
        "full_grid": grid,
    }
    make_dir(RESULTS)
    write_json(RESULTS / f"{args.task}.json", result)
    print(f"untuned {untuned_seconds:.0f} s, tuned {tuned_seconds:.0f} s: {result['ratio']:.2f}x")
    for model, lr in result["halving"].items():
        print(f"{model:<11} halving {lr:.3g}  full grid {grid[model]['train.lr']:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("tuning_cost", main))
