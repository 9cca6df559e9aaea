"""How far a command may go: where it may write (``--force`` into a committed output, links
resolved) and how much more it may train where a reading is open (``--extend``,
``--max-hours``)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from mixit.common.errors import UsageError
from mixit.common.io import command_lock, committed_results


def add_extend_options(parser: argparse.ArgumentParser) -> None:
    """``--extend`` / ``--no-extend`` and ``--max-hours`` (``mixit.study.extend``)."""
    parser.add_argument(
        "--extend",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="where a run still rising leaves a reading open, double every model's budget on "
        "every seed and judge again, up to 16x the preset's steps (default: off; the reading "
        "then names this as its next step)",
    )
    parser.add_argument(
        "--max-hours",
        type=hours,
        default=None,
        metavar="H",
        help="with --extend: start no doubling that would take training past H hours; "
        "with tuning: grow no grid past its edge and double no budget where the tuning's "
        "training would pass H hours (each model's tuning record says what was left out)",
    )


def hours(text: str) -> float:
    """``--max-hours``: a positive number of hours."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of hours, got '{text}'")
    return value


def add_force_option(parser: argparse.ArgumentParser) -> None:
    """``--force``: let ``--out`` be a committed output (``check_out``)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="let --out write into a committed output (a folder under a git work tree's "
        "results/, links resolved), which is refused otherwise; said when it happens",
    )


def check_out(args: argparse.Namespace) -> None:
    """Refuse (UsageError) an ``--out`` that is, or leads through a link to, a committed
    output, unless ``--force``, which is said; an estimate writes nothing and is let be."""
    out = getattr(args, "out", None)
    if out is None or getattr(args, "estimate", False):
        return
    committed = committed_results(Path(out))
    if committed is None:
        return
    where = Path(out).resolve()
    if not args.force:
        raise UsageError(
            f"--out {out} is {where}, a committed output under {committed}: write elsewhere "
            "(mixit records restore it there first), or --force to write into it"
        )
    print(f"mixit: writing into the committed output {where} (--force)", file=sys.stderr)


def command_lock_of(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    """The lock a command that writes into ``--out`` holds on it while it runs
    (``common.io.command_lock``), so that a second writer there exits 2 naming the first;
    ``--out`` left out is the command's ``default_out``. None for an estimate (it writes
    nothing) or a torchrun worker (the command that launched it holds the lock)."""
    out = getattr(args, "out", None)
    if out is None and hasattr(args, "default_out"):
        out = args.default_out(args)
    if out is None or getattr(args, "estimate", False) or "WORLD_SIZE" in os.environ:
        return contextlib.nullcontext()
    return command_lock(Path(out), args.command)
