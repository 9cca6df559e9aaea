"""`mixit suite`: the spectrum over a set of tasks, its heatmap and verdicts."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any

from mixit.cli.compare import EXTEND, MORE_SEEDS, next_step, with_step
from mixit.cli.launch import add_launch_options, check_jobs_fit, launch_options
from mixit.cli.limits import add_extend_options, add_force_option
from mixit.cli.options import (
    add_arch_option,
    add_axis_option,
    add_estimate_options,
    add_overrides_argument,
    add_progress_option,
    add_tune_options,
    dotted_overrides,
    model_names,
    names,
    seed_count,
    tune_choice,
)
from mixit.common.cores import busy_cores_elsewhere
from mixit.common.errors import UsageError
from mixit.models.variants import SPECTRUM
from mixit.study.axis import parse_axis
from mixit.study.compare import settings_to_tune
from mixit.study.estimate import (
    estimate_axis,
    estimate_comparison,
    format_axes_estimate,
    format_suite_estimate,
    tuning_seconds,
)
from mixit.study.litmus import AUTO, AUTO_SEEDS
from mixit.study.plan import Comparison
from mixit.study.request import check_tuning_along
from mixit.study.suite import suite, suite_tasks
from mixit.study.suite_axis import axis_tasks, suite_along


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "suite",
        help="the spectrum on a set of tasks: results.csv, a heatmap and the litmus verdicts",
        description="Compare the models on every task (default: every synthetic task) into "
        "OUT/TASK, then write OUT/results.csv (one row per run), OUT/heatmap.png (0 = chance, "
        "1 = standard) and OUT/summary.md.",
    )
    parser.add_argument("--tasks", default=None, help="comma-separated tasks (default: synthetic)")
    parser.add_argument(
        "--models",
        default=",".join(SPECTRUM),
        help="comma-separated models (default: the paper's five)",
    )
    parser.add_argument("--preset", default="tiny", help="the tasks' preset (default tiny)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--seeds",
        type=seed_count,
        default=1,
        help="seeds per model (default 1), or auto: each task as `compare --seeds auto` "
        "trains it (3, then one more at a time while a verdict's interval crosses the "
        "tolerance, up to 6)",
    )
    parser.add_argument("--out", default="runs/suite", help="output directory")
    parser.add_argument(
        "--report",
        action="store_true",
        help="train nothing: write results.csv, heatmap.png and summary.md from the tasks "
        "already finished in OUT (to read a long suite while it runs, or after it stopped)",
    )
    parser.add_argument(
        "--beside",
        metavar="EARLIER",
        default=None,
        help="an earlier suite's output folder: summary.md and suite.json give its verdicts "
        "beside this suite's, task by task, with what moved in each model's tuning "
        "(initialisation, budget, rate)",
    )
    add_axis_option(parser, "OUT/TASK/")
    add_progress_option(parser)
    add_force_option(parser)
    add_arch_option(parser)
    add_tune_options(parser)
    add_extend_options(parser)
    add_launch_options(parser)
    add_estimate_options(parser)
    add_overrides_argument(parser, "settings for every run")
    parser.set_defaults(run=run, resumable=True)


def estimate(args: argparse.Namespace) -> str:
    """``--estimate``: each task's comparison priced as ``compare --estimate`` prices it, into
    the directory the suite would give it, so finished runs cost nothing; with ``--axis``,
    each task's values as ``compare --estimate --axis`` prices them."""
    check_jobs_fit(args)
    overrides = dotted_overrides(args)
    most = AUTO_SEEDS[1] if args.seeds == AUTO else args.seeds
    seeds = range(args.seed, args.seed + most)
    models = tuple(model_names(args.models))
    busy = None if args.target else busy_cores_elsewhere()  # once for every task's estimate
    tunes = bool(settings_to_tune(tune_choice(args), overrides))

    def plan(task: str) -> Comparison:
        return Comparison(task, models, args.preset, seeds, Path(args.out) / task, overrides)

    if args.axis is None:
        tasks = suite_tasks(names(args.tasks, "--tasks"))
        estimates = [
            estimate_comparison(plan(t), args.target, args.jobs, busy, tunes) for t in tasks
        ]
        tuning = [tuning_seconds(e["rows"], overrides) for e in estimates] if tunes else []
        return format_suite_estimate(estimates, tuning)
    walked, without_knob = axis_tasks(args.axis, names(args.tasks, "--tasks"))
    axes = {task: parse_axis(args.axis, task, args.preset, overrides) for task in walked}
    estimates = [
        estimate
        for task, axis in axes.items()
        for estimate in estimate_axis(plan(task), axis, args.target, args.jobs, tunes, busy)
    ]
    tuning = [tuning_seconds(e["rows"], overrides) for e in estimates] if tunes else []
    left = f"\nleft out, no knob of their own: {', '.join(without_knob)}" if without_knob else ""
    return format_axes_estimate(axes, estimates, tuning) + left


def run(args: argparse.Namespace) -> int:
    check_tuning_along(args.axis, settings_to_tune(tune_choice(args), dotted_overrides(args)))
    if args.estimate:
        print(estimate(args))
        return 0
    if args.axis is not None and args.beside is not None:
        raise UsageError("--beside reads a plain suite; it does not go with --axis")
    plain = partial(suite, beside=args.beside)
    along = partial(suite_along, args.axis) if args.axis is not None else plain
    results = along(
        names(args.tasks, "--tasks"),
        model_names(args.models),
        preset=args.preset,
        seed=args.seed,
        seeds=args.seeds,
        out=args.out,
        overrides=dotted_overrides(args),
        progress=args.progress,
        launch=launch_options(args),
        tune=tune_choice(args),
        report_only=args.report,
        extend=args.extend,
        max_hours=args.max_hours,
    )
    print((Path(args.out) / "summary.md").read_text())
    if args.axis is None:  # an axis's open readings are its values' own (axis.json)
        asked = [word for word in args.argv if word != "--report"]
        steps = {next_step(result) for result in results.values()}
        step = with_step(asked, next((s for s in (EXTEND, MORE_SEEDS) if s in steps), ""))
        if step:
            print(f"next, to decide what is open: mixit {step}")
    table = "axis.csv" if args.axis is not None else "results.csv"
    print(f"results: {args.out}/{table}, {args.out}/heatmap.png", file=sys.stderr)
    return 0
