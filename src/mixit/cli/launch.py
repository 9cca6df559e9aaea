"""The options that say where and how a command's missing runs train (``--jobs``,
``--launcher``, ``--gpus-per-run``, ``--members``), and their checks."""

from __future__ import annotations

import argparse

from mixit.cli.options import count
from mixit.common.cores import usable_cores
from mixit.common.errors import UsageError
from mixit.running.launchers import Launch, checked_launch


def jobs_count(text: str) -> int:
    """argparse type of ``--jobs``: a count, or ``auto``, the cores mixit may use here (a run
    left alone in its batch still gets them all)."""
    if text == "auto":
        return usable_cores()
    try:
        return count(text)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error}; give a whole number >= 1 or auto") from None


def add_launch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=jobs_count,
        default=1,
        help="runs trained at once in parallel processes, the cores shared among them "
        "(default 1; locally at most the cores mixit may use; auto: that many)",
    )
    parser.add_argument(
        "--launcher",
        default="local",
        help="where the missing runs train: local (this machine, --jobs processes; default), "
        "slurm (one submitit job array) or submitit-local (the same path, as processes here)",
    )
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="with a submitting launcher: return once the runs are submitted; the same "
        "command later collects them (and submits none twice)",
    )
    parser.add_argument(
        "--gpus-per-run",
        type=count,
        default=1,
        help="train each run data-parallel on this many GPUs through torchrun (one process per "
        "GPU; CPU processes on a machine without GPUs); default 1",
    )
    parser.add_argument(
        "--members",
        choices=("auto", "on", "off"),
        default="auto",
        help="train the runs that share a variant and every shape (the seeds of a "
        "comparison, the rates of a tuning rung) as members of one batched model, each with "
        "its own seed, rate, stop rule and run directory (docs/cost.md); auto (default): on "
        "where CUDA is, off on the CPU, where batching does not pay",
    )
    parser.add_argument(
        "--slurm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit parameter for the job array, e.g. slurm_partition=gpu, "
        "gpus_per_node=1, timeout_min=600 (repeatable)",
    )


def check_jobs_fit(args: argparse.Namespace) -> None:
    """``--jobs`` trains each run in a process of its own on this machine (or prices it so,
    with ``--estimate`` and no ``--target``): more jobs than the cores it may use would each get
    a share of no core, and the price would assume cores that are not there."""
    here = args.launcher == "local" and not getattr(args, "target", None)
    if here and args.jobs > usable_cores():
        raise UsageError(
            f"--jobs {args.jobs}: this machine gives mixit {usable_cores()} cores, and each job "
            f"trains in a process of its own; use at most {usable_cores()} (--launcher slurm "
            "spreads runs over a cluster, --estimate --target prices another machine)"
        )


def launch_options(args: argparse.Namespace) -> Launch:
    """The launch options, checked before anything is planned or written
    (``running.launchers.checked_launch``)."""
    check_jobs_fit(args)
    return checked_launch(
        args.launcher,
        wait=not args.no_wait,
        slurm_options=args.slurm_option,
        gpus_per_run=args.gpus_per_run,
        jobs=args.jobs,
        members=args.members,
    )
