"""`mixit presets tune`: tune every group of runs `reproduce all` plans at a scale and write
the tuned presets file `reproduce` reads by default (docs/tuning.md, "Tuned presets").

    mixit presets tune --scale tiny --jobs 2 --out runs/presets-tiny
    mixit presets tune --scale tiny --missing-only    # a row added since: its groups alone
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mixit.cli.options import count, whole_number
from mixit.cli.parser import OneLineParser
from mixit.paper.presets import tune_missing, tune_presets
from mixit.study.experiment import SCALES


def add(commands: Any) -> None:
    parser = commands.add_parser("presets", help="tune the presets reproduce trains under")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=OneLineParser)
    tune = actions.add_parser("tune", help="tune every group of a scale and write its file")
    tune.add_argument("--scale", default="tiny", choices=SCALES)
    tune.add_argument("--jobs", type=count, default=1)
    tune.add_argument("--out", type=Path, default=None, help="default: runs/presets-SCALE")
    tune.add_argument(
        "--checkpoint-every",
        type=whole_number,
        default=0,
        help="checkpoint each trial every N steps, so that a stopped tuning's long trials go on "
        "from there; an execution setting, which changes no result or run directory",
    )
    tune.add_argument(
        "--missing-only",
        action="store_true",
        help="tune only the groups the scale's presets file has no choice for (a row added "
        "since), each at least at its task's budget there, and add them to the file; the "
        "groups there stay as they are",
    )
    tune.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = args.out or Path("runs") / f"presets-{args.scale}"
    tuning = tune_missing if args.missing_only else tune_presets
    tuning(args.scale, out, args.jobs, args.checkpoint_every)
    return 0
