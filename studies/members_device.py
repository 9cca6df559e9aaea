"""Members on one GPU (docs/cost.md): the tiny suite's runs of mixit's decoder, every task,
model and seed cut to the same steps, timed three ways on this machine: one run at a time,
``--jobs`` runs at once, and the runs that share a shape trained as members of one batched
model (``mixit.training.members``), alone and with the jobs. It writes OUT/members.json.

It first predicts its own time from the cost model on ``--target`` (each mode priced as one
run after another: an upper bound for the faster modes) and refuses, writing nothing, above
``--budget-seconds``.

    python studies/members_device.py --out results/members-h200          # on the device
    python studies/members_device.py --toy --out /tmp/members-toy         # CPU, seconds (CI)
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TypedDict

import torch

from mixit.cli import run_tool
from mixit.cli.options import count, positive
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.cost.predict import get_target, predict, shapes
from mixit.models.variants import SPECTRUM
from mixit.running.launchers import Launch
from mixit.running.runs import member_groups, run_dir_name, train_missing
from mixit.study.suite import SYNTHETIC
from mixit.tasks import TASKS
from mixit.training.resolve import resolve_config

TOY = {"tasks": ("addition",), "seeds": 2, "steps": 3, "jobs": 2}
# The toy's runs: small data and models, so that the four modes take seconds on a CPU.
TOY_SIZES = {
    "task.n_train": 128,
    "task.n_test": 32,
    "train.eval_examples": 32,
    "model.n_layer": 1,
    "model.n_embd": 32,
    "model.n_head": 2,
}


class Mode(TypedDict):
    """One way of training the runs: wall time, tokens trained and their rate."""

    jobs: int
    members: bool
    units: int  # what trains as one: a run alone or a group of members
    wall_seconds: float
    tokens: int
    tokens_per_second: float
    speedup: float  # tokens per second over those of one run at a time


class MembersTiming(TypedDict):
    device: str
    tasks: list[str]
    seeds: int
    steps: int
    runs: int
    predicted_seconds: float
    target: str
    modes: dict[str, Mode]


def plan(
    tasks: list[str], seeds: int, steps: int, sizes: dict[str, int] | None = None
) -> dict[str, RunConfig]:
    """Every task, model and seed at tiny, cut to ``steps`` steps with one evaluation, with
    the ``sizes`` overrides."""
    cut = {"train.steps": steps, "train.eval_every": steps, "train.warmup_steps": 0}
    cut |= sizes or {}
    return {
        f"{task}/{model}/{seed}": resolve_config(task, model, "tiny", seed, cut)
        for task in tasks
        for model in SPECTRUM
        for seed in range(seeds)
    }


def timed(
    configs: dict[str, RunConfig], filled: dict, out: Path, launch: Launch
) -> tuple[float, int]:
    """Wall seconds to train ``configs`` into ``out`` and the training tokens they saw;
    ``filled``: their ``shapes``."""
    started = time.perf_counter()
    summaries, _ = train_missing(configs, out, launch=launch)
    wall = time.perf_counter() - started
    tokens = sum(
        summaries[key]["steps_run"] * config.train.batch_size * filled[key][1].seq_len
        for key, config in configs.items()
    )
    return wall, tokens


def time_modes(
    configs: dict[str, RunConfig],
    filled: dict,
    modes: dict[str, Launch],
    out: Path,
    units: int,
) -> dict[str, Mode]:
    """Each mode's timing of ``configs`` (``filled``: their ``shapes``), trained afresh under
    ``out/MODE``; ``units``: the member groups they form."""
    results: dict[str, Mode] = {}
    for name, launch in modes.items():
        wall, tokens = timed(configs, filled, out / name / "runs", launch)
        rate = tokens / wall
        base = results["alone"]["tokens_per_second"] if results else rate
        count_units = units if launch.members else len(configs)
        results[name] = Mode(
            jobs=launch.jobs,
            members=launch.members,
            units=count_units,
            wall_seconds=wall,
            tokens=tokens,
            tokens_per_second=rate,
            speedup=rate / base,
        )
        print(f"{name:>16}: {wall:8.1f} s, {rate:12.0f} tokens/s, {rate / base:5.2f}x")
    return results


def arguments() -> OneLineParser:
    parser = OneLineParser(prog="members_device", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory (must not exist)")
    parser.add_argument(
        "--tasks",
        default=",".join(SYNTHETIC),
        help="comma-separated tasks (default: the suite's synthetic ones)",
    )
    parser.add_argument("--seeds", type=count, default=3, help="seeds per run (default 3)")
    parser.add_argument("--steps", type=count, default=200, help="steps a run (default 200)")
    parser.add_argument("--jobs", type=count, default=4, help="runs at once (default 4)")
    parser.add_argument("--target", default="h100", help="the cost model's device (h100)")
    parser.add_argument(
        "--budget-seconds",
        type=positive,
        default=480.0,
        help="refuse when the predicted time exceeds this (default 480: 8 minutes)",
    )
    parser.add_argument(
        "--toy", action="store_true", help="addition at toy size, two seeds, three steps"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    out = Path(args.out)
    if out.exists():
        raise UsageError(f"{out} exists; give a new --out")
    tasks = list(TOY["tasks"]) if args.toy else args.tasks.split(",")
    unknown = sorted(set(tasks) - set(TASKS) | ({"custom"} & set(tasks)))
    if unknown:
        raise UsageError(f"--tasks: {unknown[0]} is not one of {', '.join(SYNTHETIC)}")
    seeds, steps = (TOY["seeds"], TOY["steps"]) if args.toy else (args.seeds, args.steps)
    jobs = TOY["jobs"] if args.toy else args.jobs
    configs = plan(tasks, seeds, steps, TOY_SIZES if args.toy else None)
    target = get_target(args.target)
    filled = shapes(configs)
    alone = sum(predict(config, shape, target)["run_seconds"] for config, shape in filled.values())
    modes = {
        "alone": Launch(),
        f"jobs{jobs}": Launch(jobs=jobs),
        "members": Launch(members=True),
        f"members+jobs{jobs}": Launch(jobs=jobs, members=True),
    }
    predicted = alone * len(modes)
    print(
        f"{len(configs)} runs of {steps} steps: predicted at most {predicted:.0f} s "
        f"on {target.name}"
    )
    if not args.toy and predicted > args.budget_seconds:
        raise UsageError(
            f"predicted {predicted:.0f} s, over --budget-seconds {args.budget_seconds:.0f}: "
            "fewer --steps or --seeds"
        )
    units = len(member_groups({run_dir_name(c): (c, [k]) for k, c in configs.items()}))
    results = time_modes(configs, filled, modes, out, units)
    device = (
        torch.cuda.get_device_name()
        if torch.cuda.is_available()
        else f"cpu ({os.cpu_count()} cores)"
    )
    record = MembersTiming(
        device=device,
        tasks=tasks,
        seeds=seeds,
        steps=steps,
        runs=len(configs),
        predicted_seconds=predicted,
        target=target.name,
        modes=results,
    )
    path = out / "members.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.rename(path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("members_device", main))
