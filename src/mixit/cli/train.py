"""`mixit train`: one model on one task, or data-parallel through torchrun."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from mixit.cli.limits import add_force_option
from mixit.cli.options import (
    FORMATTER,
    add_common,
    catalogue,
    count,
    dotted_overrides,
)
from mixit.common.errors import UsageError
from mixit.study.draws import check_frozen_seed
from mixit.study.estimate import estimate_comparison, format_comparison_estimate
from mixit.study.plan import Comparison
from mixit.training.devices import check_ranks_fit
from mixit.training.resolve import resolve_config
from mixit.training.train import train


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "train", help="train one model on one task", epilog=catalogue(), formatter_class=FORMATTER
    )
    add_common(parser)
    add_force_option(parser)
    parser.add_argument("--model", required=True, help="model name (listed below)")
    parser.add_argument("--out", default=None, help="run directory (default runs/TASK/MODEL/seedN)")
    parser.add_argument(
        "--nproc",
        type=count,
        default=1,
        help="data-parallel processes on this machine: starts torchrun (default 1)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the run directory from its last checkpoint (train.checkpoint_every)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="train anew into a folder that holds a finished run or a run of another config",
    )
    parser.set_defaults(run=run, default_out=default_out)


def default_out(args: argparse.Namespace) -> str:
    """The folder the command writes when ``--out`` names none."""
    return f"runs/{args.task}/{args.model}/seed{args.seed}"


def run(args: argparse.Namespace) -> int:
    overrides = dotted_overrides(args)
    check_frozen_seed([args.model], overrides)
    if args.estimate:
        one_seed = range(args.seed, args.seed + 1)
        plan = Comparison(args.task, (args.model,), args.preset, one_seed, None, overrides)
        one_run = estimate_comparison(plan, args.target)
        print(format_comparison_estimate(one_run))
        return 0
    if args.nproc != 1:
        # Bad input is one line here, not one traceback per process from torchrun.
        config = resolve_config(args.task, args.model, args.preset, args.seed, overrides)
        check_ranks_fit(args.nproc, config.train.device)
        return _torchrun(args.nproc, args.argv)
    out = args.out or default_out(args)
    summary = train(
        args.task,
        args.model,
        args.preset,
        seed=args.seed,
        out=out,
        overrides=overrides,
        progress=args.progress,
        resume=args.resume,
        overwrite=args.overwrite,
    )
    print(json.dumps(summary["metrics"], indent=2))
    print(f"run directory: {out}", file=sys.stderr)
    return 0


def _torchrun(nproc: int, argv: Sequence[str]) -> int:
    """``mixit train --nproc N ...`` is ``torchrun --nproc_per_node=N -m mixit train ...``."""
    if nproc < 1:
        raise UsageError(f"--nproc must be >= 1, got {nproc}")
    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            rest.append(arg)
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}"]
    return subprocess.call([*command, "-m", "mixit", *rest])
