"""`mixit sweep`: a grid search as an Optuna study, and its best configurations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mixit.cli.launch import add_launch_options, launch_options
from mixit.cli.options import (
    add_overrides_argument,
    add_progress_option,
    command_line_overrides,
    count,
)
from mixit.common.errors import UsageError
from mixit.common.io import write_json
from mixit.tuning.sweep import best_configs, sweep


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "sweep",
        help="grid-search a task and model (Table 8) as an Optuna study",
        description="Every grid point is one run directory in OUT/runs, trained as any "
        "command's runs are (--jobs at a time here, or as a job array); the study lives in "
        "OUT/study.db (or --storage). Rerunning completes the grid; --best prints the best "
        "configuration of every study in the storage.",
    )
    parser.add_argument("--task", help="task name")
    parser.add_argument("--model", help="model name")
    parser.add_argument("--preset", default="paper", help="base preset (default paper)")
    parser.add_argument(
        "--grid", default="table8", help="'table8' (the paper's grid) or a YAML file"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--out", default="runs/sweep", help="output directory")
    parser.add_argument("--storage", default=None, help="Optuna storage URL")
    add_launch_options(parser)
    parser.add_argument(
        "--workers",
        dest="jobs",
        type=count,
        default=argparse.SUPPRESS,
        help="the older name of --jobs",
    )
    add_progress_option(parser)
    parser.add_argument(
        "--best", action="store_true", help="print the best configuration per task and model"
    )
    add_overrides_argument(parser, "fixed overrides for every trial")
    parser.set_defaults(run=run, resumable=True)


def run(args: argparse.Namespace) -> int:
    storage = args.storage or f"sqlite:///{Path(args.out).resolve() / 'study.db'}"
    if args.best:
        if not args.storage and not (Path(args.out) / "study.db").is_file():
            raise UsageError(f"no study in {args.out}; give --out or --storage")
        database = storage.removeprefix("sqlite:///")
        if storage.startswith("sqlite:///") and not Path(database).is_file():
            # Opening it would create an empty study database where the user meant to read one.
            raise UsageError(f"--storage {storage}: no such database file ({database})")
        best = best_configs(storage)
        if not best:
            raise UsageError(f"no study in {storage} has a finished trial yet: nothing to print")
        for row in best:
            keys = " ".join(f"{k}={v}" for k, v in row["overrides"].items())
            print(
                f"mixit train --task {row['task']} --model {row['model']} "
                f"--preset {row['preset']} {keys}    # {row['value']:.4f}"
            )
        write_json(Path(args.out) / "best.json", best)
        return 0
    if not (args.task and args.model):
        raise UsageError("mixit sweep needs --task and --model (or --best)")
    rows = sweep(
        args.task,
        args.model,
        preset=args.preset,
        grid=args.grid,
        out=args.out,
        storage=args.storage,
        seed=args.seed,
        overrides=command_line_overrides(args.overrides),
        launch=launch_options(args),
        progress=args.progress,
    )
    for row in rows[:10]:
        print(f"{row['value']:.4f}  {row['params']}")
    print(f"{len(rows)} finished trials; study: {storage}", file=sys.stderr)
    return 0
