"""The ``mixit`` command: a thin layer over mixit.train and mixit.compare."""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from mixit.compare import Comparison, compare, format_table, tunes_by_default
from mixit.config import parse_overrides
from mixit.devices import check_ranks_fit
from mixit.errors import RunsFailed, RunsPending, Terminated, TrainingDiverged, UsageError
from mixit.estimate import (
    estimate_comparison,
    format_comparison_estimate,
    tuning_estimate_line,
)
from mixit.io import check_writable, write_json
from mixit.launchers import Launch, check_launcher, parse_options
from mixit.resolve import resolve_config
from mixit.tasks import PRESET_NAMES, TASKS
from mixit.train import train
from mixit.variants import VARIANTS

if TYPE_CHECKING:  # the experiments load when a reproduce command runs, not at start-up
    from mixit.experiments.base import Reproduction

EXIT_USAGE = 2
EXIT_FAILED = 1  # a run diverged, or submitted runs ended without their summaries
EXIT_INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # 128 + SIGTERM


FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the task and model catalogue's lines


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input as one line and exit status 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see --help)")


def count(text: str) -> int:
    """argparse type of a count option: a whole number >= 1 (bad input is one line, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def margin(text: str) -> float:
    """argparse type of a margin in a metric's units: a finite number >= 0 (NaN would make
    every comparison false, and so every verdict wrong)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _catalogue() -> str:
    tasks = "\n".join(f"  {name:<17} {spec.summary}" for name, spec in TASKS.items())
    models = "\n".join(f"  {name:<17} {v.description}" for name, v in VARIANTS.items())
    return f"tasks:\n{tasks}\n\nmodels:\n{models}"


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="task name (listed below)")
    parser.add_argument(
        "--preset",
        default="tiny",
        help=f"one of {', '.join(PRESET_NAMES)}: tiny (one to four minutes per model on a laptop "
        "CPU; default), small (larger models, sized for a GPU: see --estimate), paper "
        "(appendix C and Table 9)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    _add_arch_option(parser)
    _add_estimate_options(parser)
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show a progress bar (default: when stderr is a terminal)",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="dotted overrides, e.g. model.n_layer=4 train.steps=300 task.max_pairs=12",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="mixit",
        description="Train the random-attention model spectrum (standard, frozen-qk, frozen-mlp, "
        "mixit, random) and compare what each task needs.",
        epilog=_catalogue(),
        formatter_class=FORMATTER,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for add_command in (
        _add_train,
        _add_compare,
        _add_reproduce,
        _add_suite,
        _add_sweep,
        _add_bench,
        _add_generate,
        _add_export,
        _add_analyze,
    ):
        add_command(commands)
    return parser


def _add_train(commands: Any) -> None:
    parser = commands.add_parser(
        "train", help="train one model on one task", epilog=_catalogue(), formatter_class=FORMATTER
    )
    _add_common(parser)
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
    parser.set_defaults(run=_train)


def _add_compare(commands: Any) -> None:
    parser = commands.add_parser(
        "compare",
        help="train several models and print a table",
        epilog=_catalogue(),
        formatter_class=FORMATTER,
    )
    _add_common(parser)
    parser.add_argument(
        "--models",
        default=",".join(VARIANTS),
        help="comma-separated model names (default: all five)",
    )
    parser.add_argument("--seeds", type=count, default=1, help="number of seeds (default 1)")
    parser.add_argument(
        "--tolerance",
        type=margin,
        default=None,
        help="the litmus test's margin: a model matches standard when at most this much worse "
        "in the task's metric (default 0.02 accuracy, 0.05 nats of log perplexity)",
    )
    _add_tune_options(parser)
    parser.add_argument("--out", default=None, help="output directory (default runs/compare/TASK)")
    _add_launch_options(parser)
    parser.set_defaults(run=_compare)


def _add_reproduce(commands: Any) -> None:
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
        "presets' full budgets, k-hop at the paper's 5 layers and 5,000 steps; hours on 2 "
        "cores: --estimate times it here, the README gives the measured times) or paper (the "
        "paper's configurations, GPUs)",
    )
    parser.add_argument("--seeds", type=count, default=3, help="seeds per run (default 3)")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="first seed (default 0): seeds N..N+K-1; the settings were chosen on 0-2, so "
        "e.g. --seed 100 confirms them on seeds nothing was tuned on",
    )
    parser.add_argument(
        "--out", default=None, help="output directory (default runs/reproduce-SCALE)"
    )
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bar"
    )
    parser.add_argument(
        "--tuned",
        default=None,
        help="best.json from `mixit sweep --best`: tuned hyperparameters per task and model",
    )
    parser.add_argument(
        "--tune",
        choices=["lr"],
        default=None,
        help="first tune every group of runs that differ only in their seed under the "
        "protocol of docs/tuning.md (learning rate by successive halving on held-out "
        "training data and tuning seed 1000, budget doubled while still rising up to 4x; "
        "table 6 also chooses model.init), then train every seed at the choice; "
        "OUT/tuning.json records it. Without it the scale's tuned presets apply where it has "
        "them (docs/tuning.md)",
    )
    parser.add_argument(
        "--no-tune",
        dest="untuned",
        action="store_true",
        help="train at the task presets' own rates, not the scale's tuned presets",
    )
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="train nothing; report the experiments (the ablation: the differences) whose "
        "runs are all finished, and judge again under the current rules, from its "
        "results.json, an experiment whose runs are gone",
    )
    _add_estimate_options(parser)
    _add_ablation_options(parser)
    _add_launch_options(parser)
    # One positional list, so that options may come before or after the overrides.
    parser.add_argument(
        "what",
        nargs="+",
        metavar="EXPERIMENT [KEY=VALUE ...]",
        help=f"'all' or one of: {_experiment_names()}; then dotted overrides applied to every "
        "training run, e.g. train.steps=50",
    )
    parser.set_defaults(run=_reproduce)


def _add_suite(commands: Any) -> None:
    parser = commands.add_parser(
        "suite",
        help="the spectrum on a set of tasks: results.csv, a heatmap and the litmus verdicts",
        description="Compare the models on every task (default: every synthetic task) into "
        "OUT/TASK, then write OUT/results.csv (one row per run), OUT/heatmap.png (0 = chance, "
        "1 = standard) and OUT/summary.md.",
    )
    parser.add_argument("--tasks", default=None, help="comma-separated tasks (default: synthetic)")
    parser.add_argument(
        "--models", default=",".join(VARIANTS), help="comma-separated models (default: all five)"
    )
    parser.add_argument("--preset", default="tiny", help="the tasks' preset (default tiny)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--seeds", type=count, default=1, help="seeds per model (default 1)")
    parser.add_argument("--out", default="runs/suite", help="output directory")
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bars"
    )
    _add_arch_option(parser)
    _add_tune_options(parser)
    _add_launch_options(parser)
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="settings for every run")
    parser.set_defaults(run=_suite)


def _add_tune_options(parser: argparse.ArgumentParser) -> None:
    tuning = parser.add_mutually_exclusive_group()
    tuning.add_argument(
        "--tune",
        choices=["lr"],
        default=None,
        help="first tune each model (docs/tuning.md): its learning rate on a grid around the "
        "preset's that extends at its edges, by successive halving on 10%% of the training "
        "data held out (never the test split) and tuning seed 1000; its budget, doubled while "
        "still rising (up to 4x); for an --arch model, also its initialisation (its own or "
        "mixit's small-output). Then train every seed at the choice. Default with --arch",
    )
    tuning.add_argument(
        "--no-tune",
        dest="tune",
        action="store_const",
        const="",
        help="train at the presets' settings, also with --arch",
    )


def _add_arch_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--arch",
        default=None,
        help="the model to take apart (model.arch): mixit (its own decoder; default), hf:NAME "
        "(a Hugging Face gpt2, llama, qwen2 or mistral built from config at the run's sizes) "
        "or module:MODULE:FACTORY (FACTORY(model_config) returns your causal LM)",
    )


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    """The dotted overrides, with ``--arch`` as ``model.arch``."""
    overrides = parse_overrides(args.overrides)
    if args.arch is not None:
        overrides["model.arch"] = args.arch
    return overrides


def _add_estimate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="train and write nothing; time a few steps of each run's config on this machine "
        "and print how long the training would take (with --jobs processes)",
    )
    parser.add_argument(
        "--target",
        default=None,
        help="with --estimate: predict instead for this device from each run's FLOPs and "
        "memory, without timing anything: h100, a100 or cpu (docs/cost.md)",
    )


def _add_launch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=count,
        default=1,
        help="runs trained at once in parallel processes, the cores shared among them (default 1)",
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
        "--slurm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a submitit parameter for the job array, e.g. slurm_partition=gpu, "
        "gpus_per_node=1, timeout_min=600 (repeatable)",
    )


def _launch(args: argparse.Namespace) -> Launch:
    """The launch options, checked before anything is planned or written."""
    if args.launcher == "local" and (args.no_wait or args.slurm_option):
        raise UsageError("--no-wait and --slurm-option need --launcher slurm or submitit-local")
    if args.gpus_per_run > 1 and args.launcher != "local":
        raise UsageError(
            "--gpus-per-run > 1 trains with local torchrun groups; on SLURM give each job its "
            "GPUs with --slurm-option gpus_per_node=K and train one run per job"
        )
    if args.launcher == "local":
        check_ranks_fit(args.gpus_per_run, option="--gpus-per-run")
    options = parse_options(args.slurm_option)
    check_launcher(args.launcher)
    return Launch(args.launcher, not args.no_wait, options, args.gpus_per_run, args.jobs)


def _add_ablation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--claims",
        default=None,
        help="ablation only: the claims to measure, e.g. C1,C5 (default C1,C2,C5,C6,C7,C8)",
    )
    parser.add_argument(
        "--differences",
        default=None,
        help="ablation only: the differences to flip, e.g. sink,biases (default all, then the "
        "whole authors construction)",
    )


def _add_sweep(commands: Any) -> None:
    parser = commands.add_parser(
        "sweep",
        help="grid-search a task and model (Table 8) as an Optuna study",
        description="Every grid point is one run directory in OUT/runs; the study lives in "
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
    parser.add_argument("--workers", type=count, default=1, help="worker processes")
    parser.add_argument("--launcher", default="local", help="local or slurm (submitit)")
    parser.add_argument(
        "--best", action="store_true", help="print the best configuration per task and model"
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="fixed overrides for every trial"
    )
    parser.set_defaults(run=_sweep)


def _add_bench(commands: Any) -> None:
    parser = commands.add_parser(
        "bench",
        help="training and decoding speed per variant at one shape (run it on a quiet machine)",
    )
    parser.add_argument(
        "--models", default="standard,frozen-qk,mixit", help="comma-separated variants"
    )
    parser.add_argument("--seq-len", type=count, default=64, help="sequence length")
    parser.add_argument("--batch", type=count, default=32, help="batch size")
    parser.add_argument("--rounds", type=count, default=10, help="timed steps per model")
    parser.add_argument("--vs-hf", action="store_true", help="also HF LlamaForCausalLM")
    parser.add_argument("--decode", action="store_true", help="also cached decoding")
    parser.add_argument(
        "--compile", action="store_true", help="also each variant under train.compile"
    )
    parser.add_argument(
        "--data", action="store_true", help="also time 100k examples of each synthetic task"
    )
    parser.add_argument(
        "--cost-check",
        nargs="?",
        const="tiny",
        default=None,
        choices=PRESET_NAMES,
        metavar="SCALE",
        help="instead: the --estimate --target cost model against this machine (its GPU if it "
        "has one), for every config of `reproduce all --scale SCALE` (default tiny; a few "
        "steps each, on random tokens in the run's shape; KEY=VALUE overrides apply to each)",
    )
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="shape, e.g. model.n_embd=512"
    )
    parser.set_defaults(run=_bench)


def _add_generate(commands: Any) -> None:
    parser = commands.add_parser(
        "generate", help="continue a prompt with a trained run (cached greedy decoding)"
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument("--prompt", default=None, help="text (lm runs)")
    parser.add_argument("--prompt-ids", default=None, help="token ids, e.g. 5,17,3")
    parser.add_argument(
        "--max-new-tokens", type=count, default=50, help="tokens to add (default 50)"
    )
    parser.set_defaults(run=_generate)


def _add_export(commands: Any) -> None:
    parser = commands.add_parser(
        "export-hf", help="write a run as a Hugging Face LlamaForCausalLM directory"
    )
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument("out_dir", help="where to write the Hugging Face model")
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a folder that is not empty"
    )
    parser.set_defaults(run=_export)


def _add_analyze(commands: Any) -> None:
    parser = commands.add_parser(
        "analyze", help="analyse a finished run directory (attention heads, covariance)"
    )
    parser.add_argument("analysis", choices=("attention", "covariance"), help="what to analyse")
    parser.add_argument("run_dir", help="a finished run directory")
    parser.add_argument(
        "--sequences", type=count, default=256, help="test sequences analysed (default 256)"
    )
    parser.add_argument(
        "--out", default=None, help="where to write figures and JSON (default RUN_DIR/analysis)"
    )
    parser.set_defaults(run=_analyze)


def _experiment_names() -> str:
    from mixit.experiments import EXPERIMENTS

    return ", ".join([*EXPERIMENTS, "ablation"])


# A dotted override, which may stand anywhere on the command line.
OVERRIDE = re.compile(r"^(model|task|train)\.[A-Za-z0-9_]+=")


def overrides_last(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``section.key=value`` moved to the end, in order: argparse fills a
    positional list only from one place, and an override is as valid before an option."""
    return [a for a in argv if not OVERRIDE.match(a)] + [a for a in argv if OVERRIDE.match(a)]


def main(argv: Sequence[str] | None = None) -> int:
    command = None
    # SIGTERM unwinds like Ctrl-C: workers stop, finished runs stay, one line, exit 143.
    previous_handler = None
    if threading.current_thread() is threading.main_thread():
        previous_handler = signal.signal(signal.SIGTERM, _terminate)
    try:
        parser = build_parser()
        argv = overrides_last(sys.argv[1:] if argv is None else argv)
        args, extra = parser.parse_known_args(argv)
        command = args.command
        # argparse stops filling a positional list at the first option: overrides given
        # after `--seeds 3` arrive here, and belong to `reproduce`'s list.
        if extra and (command != "reproduce" or any(e.startswith("-") for e in extra)):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        if command == "reproduce":
            args.what += extra
        if getattr(args, "target", None) and not args.estimate:
            raise UsageError("--target goes with --estimate: it predicts, it does not train")
        args.argv = argv
        return args.run(args)
    except UsageError as error:
        print(f"mixit: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (TrainingDiverged, RunsFailed) as error:
        print(f"mixit: {error}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as error:  # a file the command could not read or write, wherever it was
        print(f"mixit: error: {_os_error_line(error)}", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, torch.OutOfMemoryError):  # past the memory check's lower bound
        print(f"mixit: {command or 'mixit'} ran out of memory; {MEMORY_HINT}", file=sys.stderr)
        return EXIT_FAILED
    except RunsPending as pending:
        print(f"mixit: {pending}", file=sys.stderr)
        return 0
    except KeyboardInterrupt as stop:
        resumable = command in ("reproduce", "compare", "sweep")
        hint = "; the same command goes on from the finished runs" if resumable else ""
        terminated = isinstance(stop, Terminated)
        print(f"mixit: {'terminated' if terminated else 'interrupted'}{hint}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)


MEMORY_HINT = (
    "use smaller sizes, or more train.micro_batches to hold less of each batch at once "
    "(--estimate predicts a config's memory)"
)


def _os_error_line(error: OSError) -> str:
    """One line naming the file and the system's reason (a permission, a full disk)."""
    reason = error.strerror or str(error) or type(error).__name__
    return f"{error.filename}: {reason}" if error.filename else reason


def _train(args: argparse.Namespace) -> int:
    overrides = _overrides(args)
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
    out = args.out or f"runs/{args.task}/{args.model}/seed{args.seed}"
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


def _compare(args: argparse.Namespace) -> int:
    models = _models(args.models)
    overrides = _overrides(args)
    out = args.out or f"runs/compare/{args.task}"
    if args.estimate:
        seeds = range(args.seed, args.seed + args.seeds)
        plan = Comparison(args.task, tuple(models), args.preset, seeds, Path(out), overrides)
        cost = estimate_comparison(plan, args.target, args.jobs)
        print(format_comparison_estimate(cost))
        if _tune(args) or (_tune(args) is None and tunes_by_default(overrides)):
            print(tuning_estimate_line(cost["rows"], overrides))
        return 0
    result = compare(
        args.task,
        models,
        args.preset,
        seed=args.seed,
        seeds=args.seeds,
        out=out,
        overrides=overrides,
        progress=args.progress,
        tolerance=args.tolerance,
        tune=_tune(args),
        launch=_launch(args),
    )
    print(format_table(result))
    print(f"results: {out}/compare.json", file=sys.stderr)
    return 0


def _tune(args: argparse.Namespace) -> list[str] | None:
    """``--tune lr``: ["lr"]; ``--no-tune``: []; neither: None (tune --arch models only)."""
    return None if args.tune is None else [args.tune] if args.tune else []


def _models(text: str) -> list[str]:
    models = [m.strip() for m in text.split(",") if m.strip()]
    if not models:
        raise UsageError(f"--models names no model; choose from: {', '.join(VARIANTS)}")
    return models


def _generate(args: argparse.Namespace) -> int:
    from mixit.generate import generate_from_run

    result = generate_from_run(
        args.run_dir, args.prompt, args.prompt_ids, max_new_tokens=args.max_new_tokens
    )
    print(result.get("text", " ".join(map(str, result["ids"]))))
    if result["new_tokens"] < args.max_new_tokens:
        print(
            f"{result['new_tokens']} tokens added, not {args.max_new_tokens}: the prompt and "
            "they fill the model's positions (model.block_size)",
            file=sys.stderr,
        )
    print(f"{result['tokens_per_second']:.1f} tokens/s", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from mixit.export import export_hf

    print(f"written: {export_hf(args.run_dir, args.out_dir, overwrite=args.overwrite)}")
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _torchrun(nproc: int, argv: Sequence[str]) -> int:
    """``mixit train --nproc N ...`` is ``torchrun --nproc_per_node=N -m mixit train ...``."""
    import subprocess

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


def _reproduce(args: argparse.Namespace) -> int:
    from mixit.experiments import estimate_reproduction, reproduce
    from mixit.experiments.base import Reproduction
    from mixit.experiments.estimate import format_reproduction_estimate

    out = args.out or f"runs/reproduce-{args.scale}"
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    experiment, overrides = args.what[0], parse_overrides(args.what[1:])
    how = Reproduction(
        args.scale,
        args.seeds,
        args.seed,
        Path(out),
        overrides,
        args.tuned,
        progress,
        _launch(args),
        tune=args.tune == "lr",
        presets=not args.untuned,
    )
    if args.untuned and args.tune:
        raise UsageError("--tune lr and --no-tune contradict each other; give one")
    if experiment == "ablation":
        return _ablation(args, how)
    if args.claims or args.differences:
        raise UsageError("--claims and --differences belong to `mixit reproduce ablation`")
    if args.estimate:
        print(format_reproduction_estimate(estimate_reproduction([experiment], how, args.target)))
        return 0
    claims = reproduce([experiment], how, train=not args.no_train)
    for claim in claims:
        print(f"{claim.id:<4} {claim.verdict:<15} {claim.statement}")
    print(f"reports: {out}/*/report.md, claims: {out}/claims.md", file=sys.stderr)
    return 0


def _ablation(args: argparse.Namespace, how: Reproduction) -> int:
    from mixit.experiments.ablation import ablate
    from mixit.experiments.estimate import estimate_ablation, format_reproduction_estimate

    if args.tuned or args.tune:
        raise UsageError(
            "`reproduce ablation` takes no --tuned or --tune: each row sets its own options"
        )
    differences, claims = _names(args.differences), _names(args.claims)
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


def _suite(args: argparse.Namespace) -> int:
    from mixit.suite import suite

    suite(
        _names(args.tasks),
        _models(args.models),
        args.preset,
        args.seed,
        args.seeds,
        args.out,
        _overrides(args),
        args.progress,
        _launch(args),
        _tune(args),
    )
    print((Path(args.out) / "summary.md").read_text())
    print(f"results: {args.out}/results.csv, {args.out}/heatmap.png", file=sys.stderr)
    return 0


def _names(text: str | None) -> list[str] | None:
    return [name.strip() for name in text.split(",") if name.strip()] if text else None


def _bench(args: argparse.Namespace) -> int:
    from mixit.bench import bench, bench_configs, format_bench

    if args.json:
        check_writable(Path(args.json))  # before minutes of timing, not after
    if args.cost_check:
        from mixit.cost_check import cost_check, format_cost_check

        checked = cost_check(args.cost_check, sys.stderr.isatty(), parse_overrides(args.overrides))
        print(format_cost_check(checked))
        if args.json:
            write_json(Path(args.json), checked)
        return 0
    configs = bench_configs(_models(args.models), parse_overrides(args.overrides))
    result = bench(
        configs,
        seq_len=args.seq_len,
        batch=args.batch,
        vs_hf=args.vs_hf,
        decode=args.decode,
        rounds=args.rounds,
        compile=args.compile,
        data=args.data,
        device=next(iter(configs.values())).train.device,
    )
    print(format_bench(result))
    if args.json:
        write_json(Path(args.json), result)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from mixit.sweep import best_configs, sweep

    storage = args.storage or f"sqlite:///{Path(args.out).resolve() / 'study.db'}"
    if args.best:
        if not args.storage and not (Path(args.out) / "study.db").is_file():
            raise UsageError(f"no study in {args.out}; give --out or --storage")
        best = best_configs(storage)
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
        workers=args.workers,
        launcher=args.launcher,
        seed=args.seed,
        overrides=parse_overrides(args.overrides),
    )
    for row in rows[:10]:
        print(f"{row['value']:.4f}  {row['params']}")
    print(f"{len(rows)} finished trials; study: {storage}", file=sys.stderr)
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from mixit.analysis.report import analyze_run

    print(analyze_run(args.analysis, args.run_dir, sequences=args.sequences, out=args.out))
    return 0


def entry_point() -> None:
    sys.exit(main())
