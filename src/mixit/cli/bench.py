"""`mixit bench`: training and decoding speed per variant, or the cost model's check."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from mixit.analysis.presets import TINY_TASKS, format_presets, preset_rows
from mixit.analysis.speed import bench, bench_configs, format_bench
from mixit.cli.options import (
    add_overrides_argument,
    command_line_overrides,
    count,
    model_names,
    names,
)
from mixit.common.errors import UsageError
from mixit.common.io import check_writable, write_json
from mixit.paper.cost_check import cost_check, format_cost_check
from mixit.tasks import PRESET_NAMES

# The default bench's options at their defaults. --presets and --cost-check are other benches:
# each refuses those it does not read (``INSTEAD``) when given, instead of ignoring them.
SHAPE = {
    "models": "standard,frozen-qk,mixit",
    "seq_len": 64,
    "batch": 32,
    "rounds": 10,
    "vs_hf": False,
    "decode": False,
    "compile": False,
    "data": False,
    "overrides": [],
}
INSTEAD = {"presets": ("rounds",), "cost_check": ("overrides",)}


def refuse_ignored(args: argparse.Namespace) -> None:
    """One line for an option that the chosen bench would ignore (exit 2)."""
    chosen = [mode for mode in INSTEAD if getattr(args, mode) is not None]
    flags = [f"--{mode.replace('_', '-')}" for mode in chosen]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(flags)} are two benches; give one")
    for mode, flag in zip(chosen, flags, strict=True):
        ignored = [
            "KEY=VALUE overrides" if key == "overrides" else f"--{key.replace('_', '-')}"
            for key, default in SHAPE.items()
            if key not in INSTEAD[mode] and getattr(args, key) != default
        ]
        if ignored:
            raise UsageError(f"{flag} does not read {', '.join(ignored)}; leave them out")


def add(commands: Any) -> None:
    parser = commands.add_parser(
        "bench",
        help="training and decoding speed per variant at one shape (run it on a quiet machine)",
    )
    parser.add_argument("--models", default=SHAPE["models"], help="comma-separated variants")
    parser.add_argument("--seq-len", type=count, default=SHAPE["seq_len"], help="sequence length")
    parser.add_argument("--batch", type=count, default=SHAPE["batch"], help="batch size")
    parser.add_argument("--rounds", type=count, default=SHAPE["rounds"], help="timed steps a model")
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
    parser.add_argument(
        "--presets",
        nargs="?",
        const=",".join(TINY_TASKS),
        default=None,
        metavar="TASKS",
        help="instead: the tiny preset of each task (comma-separated; default "
        f"{','.join(TINY_TASKS)}) on the CPU: tokens/s, MFU, forward/backward/AdamW ms, "
        "fused AdamW, the matmul share of the step",
    )
    parser.add_argument(
        "--json", default=None, help="write the figures to this file (a new one, or --force)"
    )
    parser.add_argument(
        "--force", action="store_true", help="let --json replace a file that exists (said)"
    )
    add_overrides_argument(parser, "shape, e.g. model.n_embd=512")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    refuse_ignored(args)
    if args.json:  # before minutes of timing, not after
        check_writable(Path(args.json))
        if os.path.lexists(args.json) and not args.force:
            raise UsageError(f"{args.json} exists; name a new file, or --force to replace it")
    if args.cost_check is not None:
        checked = cost_check(args.cost_check, None, command_line_overrides(args.overrides))
        print(format_cost_check(checked))
        if args.json:
            _write(Path(args.json), checked)
        return 0
    if args.presets is not None:  # '' names nothing: a refusal, not the default bench
        result = preset_rows(names(args.presets, "--presets"), rounds=args.rounds)
        print(format_presets(result))
        if args.json:
            _write(Path(args.json), result)
        return 0
    configs = bench_configs(model_names(args.models), command_line_overrides(args.overrides))
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
        _write(Path(args.json), result)
    return 0


def _write(path: Path, result: Any) -> None:
    """``--json``'s file, and a word where it replaced one (``--force``)."""
    replaced = os.path.lexists(path)
    write_json(path, result)
    if replaced:
        print(f"replaced {path} (--force)", file=sys.stderr)
