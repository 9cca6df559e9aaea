"""`mixit compare`: the spectrum on one task, and the litmus table."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.cli.launch import add_launch_options, check_jobs_fit, launch_options
from mixit.cli.limits import add_extend_options, add_force_option
from mixit.cli.options import (
    FORMATTER,
    add_axis_option,
    add_common,
    add_tune_options,
    catalogue,
    count,
    dotted_overrides,
    margin,
    model_names,
    seed_count,
    tune_choice,
)
from mixit.common.io import read_json
from mixit.config.overrides import Setting, Settings
from mixit.models.variants import HYBRID_SYNTAX
from mixit.running.launchers import Launch
from mixit.study.axis import along_axis, format_axis
from mixit.study.compare import run_study
from mixit.study.comparison import ComparisonResult
from mixit.study.draws import (
    FROZEN_KEY,
    along_draws,
    draw_seeds,
    format_draws,
)
from mixit.study.estimate import estimate_study
from mixit.study.explain import explain, format_explanation, write_explanation
from mixit.study.extend import MAX_HOURS
from mixit.study.litmus import undecided_by_interval
from mixit.study.per_layer import (
    format_necessity,
    necessity_map,
    write_necessity,
)
from mixit.study.plan import Study
from mixit.study.request import CompareRequest, plan_compare
from mixit.study.results import read_results_csv
from mixit.study.table import format_table


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "compare",
        help="train several models and print a table",
        epilog=catalogue(),
        formatter_class=FORMATTER,
    )
    add_common(parser)
    add_force_option(parser)
    parser.add_argument(
        "--models",
        default=None,
        help="comma-separated model names (default: the paper's five); a hybrid layer by "
        f"layer is {HYBRID_SYNTAX}",
    )
    parser.add_argument(
        "--per-layer",
        metavar="VARIANT",
        default=None,
        help="train VARIANT in every layer but one and in one layer only (hybrids with "
        "standard), and read which layers need standard's mixer: OUT/necessity.json and "
        "necessity.png (docs/rows.md)",
    )
    parser.add_argument(
        "--seeds",
        type=seed_count,
        default=1,
        help="number of seeds (default 1), or auto: 3, then one more at a time while a "
        "verdict's interval crosses the tolerance, up to 6",
    )
    parser.add_argument(
        "--tolerance",
        type=margin,
        default=None,
        help="the litmus test's margin: a model matches standard when at most this much worse "
        "in the task's metric (default 0.02 accuracy, 0.05 nats of log perplexity)",
    )
    add_axis_option(parser, "OUT/")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="when a variant falls short, mean-ablate the reference's components one at a time "
        "and print those its metric rests on, with their head scores: OUT/explain.json",
    )
    parser.add_argument(
        "--frozen-draws",
        metavar="K",
        type=count,
        default=None,
        help="train the models that keep a random draw untrained (mixit, frozen-qk, frozen-mlp, "
        "random) under K draws of it (model.frozen_seed), each crossed with every seed, and "
        "read whether each verdict holds on every draw: OUT/draw-SEED/, OUT/draws.json",
    )
    add_tune_options(parser)
    add_extend_options(parser)
    parser.add_argument("--out", default=None, help="output directory (default runs/compare/TASK)")
    add_launch_options(parser)
    parser.set_defaults(run=run, resumable=True, default_out=default_out)


def default_out(args: argparse.Namespace) -> str:
    """The folder the command writes when ``--out`` names none."""
    return f"runs/compare/{args.task}"


def compare_study(
    args: argparse.Namespace, models: Sequence[str] | None, overrides: Settings
) -> Study:
    """The study that `compare`'s options name. An estimate prices its runs here or for
    ``--target`` without launching them: of the launch, its jobs alone matter, and the other
    launch options are not checked."""
    if args.estimate:
        check_jobs_fit(args)
    launch = Launch(jobs=args.jobs) if args.estimate else launch_options(args)
    return Study.of(
        [args.task],
        models,
        out=args.out or default_out(args),
        overrides=overrides,
        tune=tune_choice(args),
        launch=launch,
        preset=args.preset,
        seed=args.seed,
        seeds=args.seeds,
        progress=args.progress,
        tolerance=args.tolerance,
        extend=args.extend,
        max_hours=args.max_hours,
    )


def shown(study: Study, key: str) -> Callable[[Path, dict[str, Setting]], ComparisonResult]:
    """The comparison of ``study`` at one value of ``key`` in a folder of its own, its table
    printed as soon as it is read (an axis's value, a frozen draw)."""

    def compare_at(folder: Path, point: dict[str, Setting]) -> ComparisonResult:
        result = run_study(study.on(study.task, folder, point))
        print(f"{key}={point[key]}:\n{format_table(result)}\n")
        return result

    return compare_at


def compare_draws(args: argparse.Namespace, study: Study, draws: int) -> int:
    """``--frozen-draws K``: the comparison under each draw, the reading over them, and the
    command that would decide what a draw left open."""
    out, draw_each = study.out, shown(study, FROZEN_KEY)
    print(format_draws(along_draws(draws, out, dict(study.overrides), draw_each)))
    # A draw left open by a run still rising decides under --extend, as one comparison
    # does; every draw runs the same command.
    opened = (out / f"draw-{seed}" / "compare.json" for seed in draw_seeds(draws))
    if any(next_step(read_json(path, str(path))) == EXTEND for path in opened):
        print(f"next, to decide what is open: mixit {with_step(args.argv, EXTEND)}")
    print(f"results: {out}/draws.json", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    overrides = dotted_overrides(args)
    models = None if args.models is None else model_names(args.models)
    request = plan_compare(
        compare_study(args, models, overrides),
        axis=args.axis,
        per_layer=args.per_layer,
        draws=args.frozen_draws,
        explain=args.explain,
    )
    study, axis = request.study, request.axis
    if args.estimate:
        print(estimate_study(study, args.target, axis, request.draws))
        return 0
    if request.draws is not None:
        return compare_draws(args, study, request.draws)
    if axis is not None:
        print(format_axis(along_axis(axis, study.out, study.overrides, shown(study, axis.key))))
        print(f"results: {study.out}/axis.json", file=sys.stderr)
        return 0
    return compare_once(args, request)


def compare_once(args: argparse.Namespace, request: CompareRequest) -> int:
    """One comparison, its table, and what ``--per-layer`` and ``--explain`` read of it."""
    out = request.study.out
    result = run_study(request.study)
    print(format_table(result))
    if request.per_layer is not None and request.depth is not None:
        found = necessity_map(result, request.per_layer, request.depth)
        write_necessity(found, out)
        print(format_necessity(found))
        print(f"necessity map: {out}/necessity.png", file=sys.stderr)
    if request.explain:
        explained = explain(result, read_results_csv(out / "results.csv"))
        if explained is None:
            print("explained: no variant falls short, so nothing to explain")
        else:
            write_explanation(explained, out)
            print(format_explanation(explained))
    step = next_command(args.argv, result)
    if step:
        print(f"next, to decide what is open: mixit {step}")
    print(f"results: {out}/compare.json", file=sys.stderr)
    return 0


# What decides an open reading, the first that applies first: a longer budget where a run was
# still rising (more seeds cannot settle that), more seeds where only the interval left it open.
EXTEND, MORE_SEEDS = "extend", "seeds"


def next_step(result: Mapping[str, Any]) -> str:
    """What would decide the readings ``result`` left open: ``EXTEND`` where a run was still
    rising and no extension ran, ``MORE_SEEDS`` where only the interval over seeds did and
    ``--seeds auto`` did not run, "" when nothing is open or neither would decide it."""
    rows = result.get("litmus", {}).get("rows", [])
    if not any(row["matches"] is None for row in rows):
        return ""
    extension = result.get("extension")
    cut_short = extension is not None and extension.get("stopped") == MAX_HOURS
    if any(row.get("still_rising") for row in rows) and (extension is None or cut_short):
        return EXTEND
    if undecided_by_interval(result["litmus"]) and "seeds_auto" not in result:
        return MORE_SEEDS
    return ""


def with_step(argv: Sequence[str], step: str) -> str:
    """``argv`` (the command that made a reading) with ``step`` taken: ``--extend`` added, or
    its ``--seeds`` replaced by ``--seeds auto``; "" for no step."""
    if step == EXTEND:  # again without the --max-hours that stopped it, if one did
        kept = _without(argv, "--max-hours")
        return shlex.join(kept if "--extend" in kept else [*kept, "--extend"])
    if step != MORE_SEEDS:
        return ""
    return shlex.join([*_without(argv, "--seeds"), "--seeds", "auto"])


def _without(argv: Sequence[str], option: str) -> list[str]:
    """``argv`` without ``option`` and its value (``--option V`` or ``--option=V``)."""
    kept = list(argv)
    for at, word in enumerate(argv):
        if word == option or word.startswith(f"{option}="):
            del kept[at : at + (1 if "=" in word else 2)]
            break
    return kept


def next_command(argv: Sequence[str], result: Mapping[str, Any]) -> str:
    """The command that would decide the readings ``result`` left open (``next_step``), from
    the one that made it (``argv``); "" when there is none."""
    return with_step(argv, next_step(result))
