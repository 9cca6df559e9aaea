"""`mixit analyze`: a finished run's attention heads or token covariance."""

from __future__ import annotations

import argparse
from typing import Any

from mixit.analysis.report import ANALYSES, analyze_run
from mixit.cli.options import count


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "analyze", help="analyse a finished run directory (attention heads, covariance, ablation)"
    )
    parser.add_argument(
        "analysis",
        choices=ANALYSES,
        help="what to analyse: attention heads, token covariance, ablate (each head and MLP "
        "mean-ablated in turn, the drop in the task's metric), or dynamics (the head scores a "
        "run tracked with train.track_heads, against the step)",
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument(
        "--sequences", type=count, default=256, help="test sequences analysed (default 256)"
    )
    parser.add_argument(
        "--out", default=None, help="where to write figures and JSON (default RUN_DIR/analysis)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print(analyze_run(args.analysis, args.run_dir, sequences=args.sequences, out=args.out))
    return 0
