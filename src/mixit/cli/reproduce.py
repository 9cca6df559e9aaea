"""`mixit reproduce`: an experiment of the paper (or all, or the ablation) and its claims."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from mixit.cli.launch import add_launch_options, launch_options
from mixit.cli.limits import add_extend_options, add_force_option
from mixit.cli.options import (
    add_ablation_options,
    add_estimate_options,
    add_progress_option,
    add_tune_options,
    command_line_overrides,
    names,
    seed_count,
    tune_choice,
)
from mixit.common.errors import UsageError
from mixit.paper import EXPERIMENTS, estimate_reproduction, reproduce
from mixit.paper.ablation import ablate
from mixit.paper.claims import experiment_of
from mixit.paper.estimate import (
    estimate_ablation,
    format_reproduction_estimate,
)
from mixit.paper.extend import read_extension, reproduce_extending
from mixit.paper.registry import QUESTIONS
from mixit.paper.runner import planned_configs
from mixit.paper.seeds_auto import open_by_the_seeds, reproduce_until_decided
from mixit.study.claim import (
    FRESH_FIRST_SEED,
    TUNED_ON_SEEDS,
)
from mixit.study.experiment import (
    Reproduction,
)
from mixit.study.litmus import AUTO, AUTO_SEEDS


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "reproduce",
        help="reproduce a table or figure of the paper (or all) and judge its claims",
        usage="%(prog)s [options] EXPERIMENT|all [KEY=VALUE ...]",
        description="Train every run an experiment needs (finished runs are reused), write "
        "OUT/EXPERIMENT/report.md, results.json and PNGs, and OUT/claims.md + claims.json.",
    )
    parser.add_argument(
        "--scale",
        default="tiny",
        help="tiny (laptop CPU, shortened budgets; default), small (the tiny models at their "
        "presets' full budgets, k-hop at the paper's 5 layers and 5,000 steps, each budget "
        "then as the scale's tuned presets set it; hours on 2 cores: --estimate times it "
        "here, docs/reproducing.md gives the measured times) or paper (the "
        "paper's configurations, GPUs)",
    )
    parser.add_argument(
        "--seeds",
        type=seed_count,
        default=3,
        help="seeds per run (default 3), or auto: 3, then one more at a time while a claim is "
        "inconclusive only because its seeds left a comparison undecided, up to 6",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=FRESH_FIRST_SEED,
        help=f"first seed: seeds N..N+K-1 (default {FRESH_FIRST_SEED}, seeds nothing was "
        "tuned on, so that the verdicts confirm); --seed 0 gives 0-2, the seeds the settings "
        "were chosen on",
    )
    parser.add_argument(
        "--out", default=None, help="output directory (default runs/reproduce-SCALE)"
    )
    add_progress_option(parser)
    _add_tuning_choices(parser)
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="train nothing; report the experiments (the ablation: the differences) whose "
        "runs are all finished, and judge again under the current rules, from its "
        "results.json, an experiment whose runs are gone",
    )
    add_estimate_options(parser)
    add_ablation_options(parser)
    add_launch_options(parser)
    # One positional list, so that options may come before or after the overrides.
    parser.add_argument(
        "what",
        nargs="+",
        metavar="EXPERIMENT [KEY=VALUE ...]",
        help=f"'all' or one of: {_experiment_names()}; then dotted overrides applied to every "
        "training run, e.g. train.steps=50",
    )
    parser.set_defaults(run=run, trailing_overrides="what", resumable=True, default_out=default_out)


def _add_tuning_choices(parser: argparse.ArgumentParser) -> None:
    """Which learning rates the runs train at: tuned presets, a sweep's, tuned here, or none."""
    parser.add_argument(
        "--tuned",
        default=None,
        help="best.json from `mixit sweep --best`: tuned hyperparameters per task and model",
    )
    add_extend_options(parser)
    add_force_option(parser)
    add_tune_options(
        parser,
        tune_help="first tune every group of runs that differ only in their seed under the "
        "protocol of docs/tuning.md (learning rate by successive halving on held-out "
        "training data and tuning seed 1000, budget doubled while still rising up to 4x; "
        "table 6 also chooses model.init), then train every seed at the choice; "
        "OUT/tuning.json records it. Without it the scale's tuned presets apply where it has "
        "them (docs/tuning.md)",
        no_tune_help="train at the task presets' own rates, not the scale's tuned presets",
    )


def default_out(args: argparse.Namespace) -> str:
    """The folder the command writes when ``--out`` names none."""
    return f"runs/reproduce-{args.scale}"


def run(args: argparse.Namespace) -> int:
    out = args.out or default_out(args)
    experiment, overrides = args.what[0], command_line_overrides(args.what[1:])
    auto = args.seeds == AUTO
    how = Reproduction(
        args.scale,
        AUTO_SEEDS[0] if auto else args.seeds,
        args.seed,
        Path(out),
        overrides,
        args.tuned,
        args.progress,
        launch_options(args),
        tune=tune_choice(args) == ["lr"],
        presets=tune_choice(args) != [],
    )
    if experiment == "ablation":
        if auto or args.extend:
            raise UsageError("--seeds auto and --extend are for the experiments, not the ablation")
        return _ablation(args, how)
    if args.claims is not None or args.differences is not None:
        raise UsageError("--claims and --differences belong to `mixit reproduce ablation`")
    if args.estimate:  # --seeds auto priced at the most it may train
        priced = dataclasses.replace(how, seeds=AUTO_SEEDS[1]) if auto else how
        print(
            format_reproduction_estimate(estimate_reproduction([experiment], priced, args.target))
        )
        return 0
    if args.extend and (auto or args.no_train):
        raise UsageError("--extend trains: it goes with neither --no-train nor --seeds auto")
    if args.extend:
        claims = reproduce_extending([experiment], how, reproduce, planned_configs, args.max_hours)
        record = read_extension(how.out)
        rounds = ", ".join(
            f"{len(r['families'])} families in {r['seconds']:,.0f} s" for r in record["rounds"]
        )
        left = ", ".join(record["open"]) or "none"
        print(
            f"--extend: {rounds or 'no round'}; still open ({record['stopped']}): {left}",
            file=sys.stderr,
        )
    elif auto:
        claims, seeds = reproduce_until_decided([experiment], how, reproduce, not args.no_train)
        how = dataclasses.replace(how, seeds=seeds)
        left = ", ".join(open_by_the_seeds(claims)) or "none"
        print(f"--seeds auto: {seeds} seeds; still undecided by the seeds: {left}", file=sys.stderr)
    else:
        claims = reproduce([experiment], how, train=not args.no_train)
    ran = [c for c in claims if experiment == "all" or experiment_of(c.id) == experiment]
    for claim in ran or claims:
        print(f"{claim.id:<4} {claim.verdict:<15} {claim.statement}")
    print(
        f"seeds {how.first_seed}-{how.first_seed + how.seeds - 1}: {_seeds_note(how)}",
        file=sys.stderr,
    )
    print(f"reports: {out}/*/report.md, claims: {out}/claims.md", file=sys.stderr)
    return 0


def _seeds_note(how: Reproduction) -> str:
    """Whether the seeds of this call can confirm the settings, in a few words."""
    fresh = set(range(how.first_seed, how.first_seed + how.seeds)).isdisjoint(TUNED_ON_SEEDS)
    if fresh:
        return "nothing was tuned on them, so these verdicts confirm"
    return "the settings were chosen on them, so these verdicts confirm nothing"


def _experiment_names() -> str:
    return ", ".join([*EXPERIMENTS, "ablation", *QUESTIONS])


def _ablation(args: argparse.Namespace, how: Reproduction) -> int:
    if args.tuned or args.tune:
        raise UsageError(
            "`reproduce ablation` takes no --tuned or --tune: each row sets its own options"
        )
    differences, claims = names(args.differences, "--differences"), names(args.claims, "--claims")
    if args.estimate:
        estimate = estimate_ablation(differences, claims, how, args.target)
        print(format_reproduction_estimate(estimate))
        return 0
    results = ablate(differences, claims, how, not args.no_train)
    for difference, by_claim in results["differences"].items():
        verdicts = ", ".join(f"{c} {r['verdict']}" for c, r in by_claim.items())
        print(f"{difference:<18} {verdicts}")
    print(f"report: {how.out}/ablation/report.md", file=sys.stderr)
    return 0
