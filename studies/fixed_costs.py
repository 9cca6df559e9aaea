"""What a short run pays besides its steps (issue #102 item 2): a pool of training workers
started afresh, each task's data built, and one 100-step run's own time outside its steps.
The benchmark behind docs/speed.md's "Fixed costs", not a timed test.

    python studies/fixed_costs.py --out results/fixed-costs/fixed-costs.json
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.options import count
from mixit.cli.parser import OneLineParser
from mixit.common.io import write_json
from mixit.running.workers import worker_pool
from mixit.tasks import TASKS, get_task
from mixit.training.resolve import resolve_config
from mixit.training.train import run

# The tasks of the tiny reproduction whose data mixit builds itself (custom reads files, lm
# and sentiment read corpora).
GENERATED = ("retrieval", "mqar", "khop", "addition", "dyck", "modular-addition", "memorization")


def ready() -> bool:
    """A worker's first task: what its first run imports, and its first optimiser (whose
    construction imports torch's compiler stack once a process)."""
    import torch

    import mixit.training.train  # noqa: F401

    torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
    return True


def pool_start(jobs: int) -> float:
    """Seconds from starting a pool of ``jobs`` workers to every worker ready to train: what
    each batch of runs paid when every batch started its own pool."""
    began = time.perf_counter()
    pool = worker_pool(jobs)
    try:
        futures = [pool.submit(ready) for _ in range(jobs)]
        for future in futures:
            future.result()
        return time.perf_counter() - began
    finally:
        pool.shutdown()


def data_seconds(task: str) -> float:
    """Seconds to build ``task``'s data at tiny, seed 0."""
    config = resolve_config(task, "standard", "tiny", 0, {})
    began = time.perf_counter()
    get_task(task).make_data(config.task, 0)
    return time.perf_counter() - began


def short_run(steps: int, folder: Path) -> dict[str, float]:
    """One run of tiny retrieval (the standard model, ``steps`` steps, one evaluation) in
    this process: its whole time, and its steps' own (``train_seconds``)."""
    overrides = {"train.steps": steps, "train.eval_every": steps}
    config = resolve_config("retrieval", "standard", "tiny", 0, overrides)
    began = time.perf_counter()
    summary = run(config, folder / f"run-{time.monotonic_ns()}", progress=False)
    return {"whole_seconds": time.perf_counter() - began, "step_seconds": summary["train_seconds"]}


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="fixed_costs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--tries", type=count, default=3, help="tries of each (default 3)")
    parser.add_argument("--jobs", type=count, default=2, help="workers a pool (default 2)")
    args = parser.parse_args(argv)
    tasks, tries = [task for task in GENERATED if task in TASKS], args.tries
    with tempfile.TemporaryDirectory() as scratch:
        runs = [short_run(100, Path(scratch)) for _ in range(args.tries)]
    measured = {
        "jobs": args.jobs,
        "pool_start_seconds": [pool_start(args.jobs) for _ in range(args.tries)],
        "data_seconds": {task: min(data_seconds(task) for _ in range(tries)) for task in tasks},
        "short_runs": runs,
    }
    write_json(Path(args.out), measured)
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("fixed_costs", main))
