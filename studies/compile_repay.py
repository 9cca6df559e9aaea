"""Whether ``torch.compile`` repays its compile time over a tiny preset's budget on this
machine (issue #102 item 3): per task, the standard model trained eager and compiled for
``--steps`` steps with an evaluation at half of them, each run's steady seconds a step (from
its two evaluations' ``train_seconds``) and the compiled run's one-off cost (its first half's
seconds beyond its steady pace, less the eager run's). Writes a JSON file; docs/cost.md's
rule reads it.

    python studies/compile_repay.py --out results/compile-repay/compile-repay.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.tasks import TASKS
from mixit.training.resolve import resolve_config
from mixit.training.train import run

DEFAULT_TASKS = "retrieval,addition,memorization,mqar"


def timed(task: str, steps: int, compiled: bool, folder: Path) -> dict[str, float]:
    """One run's seconds a step at its steady pace, and its first half's seconds beyond it."""
    overrides = {
        "train.steps": steps,
        "train.eval_every": steps // 2,
        "train.compile": compiled,
        "train.stop_at": 2.0,  # never reached: every run trains all its steps
        "train.plateau": 0.0,
    }
    config = resolve_config(task, "standard", "tiny", 0, overrides)
    out = folder / f"{task}-{'compiled' if compiled else 'eager'}"
    run(config, out, progress=False)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    half, whole = (json.loads(line)["train_seconds"] for line in lines[:2])
    pace = (whole - half) / (steps - steps // 2)
    return {"step_seconds": pace, "first_half_extra": half - pace * (steps // 2)}


def measure(task: str, steps: int, folder: Path) -> dict[str, object]:
    eager, compiled = (timed(task, steps, flag, folder) for flag in (False, True))
    budget = resolve_config(task, "standard", "tiny", 0, {}).train.steps
    saved = budget * (eager["step_seconds"] - compiled["step_seconds"])
    overhead = compiled["first_half_extra"] - eager["first_half_extra"]
    return {
        "task": task,
        "budget": budget,
        "eager_step_seconds": eager["step_seconds"],
        "compiled_step_seconds": compiled["step_seconds"],
        "compile_seconds": overhead,
        "saved_over_budget": saved,
    }


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="compile_repay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help=f"default {DEFAULT_TASKS}")
    parser.add_argument("--steps", type=count, default=200, help="steps a run (default 200)")
    args = parser.parse_args(argv)
    tasks = args.tasks.split(",")
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise UsageError(f"--tasks: {unknown[0]} is not a task; choose from {', '.join(TASKS)}")
    if args.steps < 4:
        raise UsageError(f"--steps {args.steps}: give at least 4, two evaluations apart")
    with tempfile.TemporaryDirectory() as scratch:
        rows = [measure(task, args.steps, Path(scratch)) for task in tasks]
    write_json(Path(args.out), {"steps": args.steps, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("compile_repay", main))
