"""``reproduce --extend``: spend where a claim is open (the reading rules of 2026-12-06, as
``compare --extend`` does for a litmus reading). After a reproduction, each claim left
inconclusive by runs cut off while still rising opens its *family*: every run its experiment
plans on the task of such a run, every model and verdict seed. Each open family trains again at
twice its budget (the tuned rates stay; a fresh schedule), and the reproduction is judged again;
this repeats while a family is open, up to ``study.extend.EXTEND_CAP`` times the task preset's
steps. The most decisive families (the most claims held open) train first, then the cheapest;
with ``max_hours``, a round takes only those whose doubling, priced at twice their runs'
measured seconds, still fits. ``OUT/extension.json`` records each family's factor (which
``reproduce`` then plans its runs at, ``--no-train`` too) and every round: the families, why,
and the seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

# typing_extensions, not typing: pydantic reads TypedDicts of Python 3.11 only from there.
from typing_extensions import TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import read_record, write_json
from mixit.config.overrides import with_settings
from mixit.config.schema import RunConfig
from mixit.paper.claims import experiment_of
from mixit.running.runs import train_missing
from mixit.study.claim import (
    INCONCLUSIVE,
    Claim,
)
from mixit.study.experiment import (
    SCALE_PRESET,
    Experiment,
    Reproduction,
    Run,
)
from mixit.study.extend import EXTEND_CAP
from mixit.study.references import cut_off_runs, tasks_read
from mixit.tasks import get_task

EXTENSION = "extension.json"


class Round(TypedDict):
    """One round of doublings: each family's factor after it, and the seconds it took."""

    families: dict[str, int]
    seconds: float


class ExtensionRecord(TypedDict):
    """``OUT/extension.json``: each family's factor on its planned budget, every round, why
    the doublings stopped (``decided``, ``cap``, ``max_hours``) and the families left open."""

    factors: dict[str, int]
    rounds: list[Round]
    stopped: str
    open: list[str]


def family(experiment: str, task: str) -> str:
    """A family's name: ``table3/addition``."""
    return f"{experiment}/{task}"


def read_extension(out: Path) -> ExtensionRecord:
    """``OUT/extension.json``, or a record of no extension where there is none; a damaged one
    is refused (UsageError), since the runs it names could not be planned."""
    path = out / EXTENSION
    if not path.is_file():
        return {"factors": {}, "rounds": [], "stopped": "decided", "open": []}
    remedy = "remove it to plan without"
    stored = read_record(path, ExtensionRecord, str(path), remedy)
    if any(factor < 1 for factor in stored["factors"].values()):
        raise UsageError(f"{path}: factors: each is at least 1; {remedy}")
    return stored


def extended(
    configs: Mapping[Run, RunConfig], experiments: Sequence[Experiment], how: Reproduction
) -> dict[Run, RunConfig]:
    """The plan's configs at their families' factors (``OUT/extension.json``): a run two
    experiments plan takes the larger factor."""
    factors = read_extension(Path(how.out))["factors"]
    if not factors:
        return dict(configs)
    factor_of: dict[Run, int] = {}
    for experiment in experiments:
        for run in experiment.every_run(how.scale, how.seed_range):
            factor = factors.get(family(experiment.name, run.task), 1)
            factor_of[run] = max(factor, factor_of.get(run, 1))
    return {
        run: with_settings(config, {"train.steps": config.train.steps * factor_of.get(run, 1)})
        if factor_of.get(run, 1) > 1
        else config
        for run, config in configs.items()
    }


class OpenFamily(NamedTuple):
    """A family some claim left open: how many claims it holds open, and the training seconds
    its finished runs took (twice that prices its doubling)."""

    claims: int
    seconds: float


def open_families(
    experiments: Sequence[Experiment],
    claims: Sequence[Claim],
    configs: Mapping[Run, RunConfig],
    how: Reproduction,
) -> dict[str, OpenFamily]:
    """The families a claim left open: inconclusive on runs cut off while still rising
    (``Claim.unfinished``), each the experiment and task of such a run the claim reads."""
    held = {claim.id for claim in claims if claim.verdict == INCONCLUSIVE and claim.unfinished}
    summaries, _ = train_missing(configs, Path(how.out) / "runs", train=False)
    holding: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for experiment in experiments:
        planned = experiment.plan(how.scale, how.seed_range)
        cut = cut_off_runs(planned, summaries, configs)
        reads = tasks_read(experiment, how.scale, how.seed_range)
        for claim in sorted(c for c in held if experiment_of(c) == experiment.name):
            tasks = reads.get(claim) or {run.task for run in planned}
            for task in {task for task, _ in cut if task in tasks}:
                name = family(experiment.name, task)
                holding[name] = holding.get(name, 0) + 1
                seconds[name] = sum(
                    summaries[run].get("train_seconds", 0.0)
                    for run in planned
                    if run.task == task and run in summaries
                )
    return {name: OpenFamily(holding[name], seconds[name]) for name in sorted(holding)}


def first_to_train(
    families: Mapping[str, OpenFamily], jobs: int, seconds_left: float | None
) -> list[str]:
    """The families a round doubles: the most decisive first (the most claims held open), then
    the cheapest; with ``seconds_left``, only those whose doubling, priced at twice their
    runs' seconds over ``jobs``, still fits, in that order."""
    order = sorted(families, key=lambda name: (-families[name].claims, families[name].seconds))
    if seconds_left is None:
        return order
    chosen, spent = [], 0.0
    for name in order:
        price = 2 * families[name].seconds / max(jobs, 1)
        if spent + price <= seconds_left:
            chosen.append(name)
            spent += price
    return chosen


def _within_cap(
    name: str, factor: int, configs: Mapping[Run, RunConfig], how: Reproduction
) -> bool:
    """Whether ``name`` may train at ``factor`` times its planned budget: every run of it at
    most ``EXTEND_CAP`` times its task preset's steps."""
    task = name.split("/", 1)[1]
    preset = get_task(task).presets[SCALE_PRESET[how.scale]].get("train.steps", 0)
    budgets = [c.train.steps for run, c in configs.items() if run.task == task]
    return bool(budgets) and (not preset or factor * max(budgets) <= EXTEND_CAP * preset)


Reproduce = Callable[[Sequence[str], Reproduction, bool], list[Claim]]
Plan = Callable[[Sequence[str], Reproduction], tuple[list[Experiment], dict[Run, RunConfig]]]


def reproduce_extending(
    names: Sequence[str],
    how: Reproduction,
    reproduce: Reproduce,
    plan: Plan,
    max_hours: float | None = None,
) -> list[Claim]:
    """``reproduce(names, how, True)``, then a round of doublings while a family is open
    (``open_families``, the most decisive and cheapest first: ``first_to_train``), each
    recorded in ``OUT/extension.json`` before it trains."""
    out = Path(how.out)
    claims, started = reproduce(names, how, True), time.monotonic()
    while True:
        record = read_extension(out)
        experiments, configs = plan(names, how)
        opened = open_families(experiments, claims, configs, how)
        factors = record["factors"]
        below_cap = {name: f for name, f in opened.items() if _within_cap(name, 2, configs, how)}
        left = None if max_hours is None else max_hours * 3600 - (time.monotonic() - started)
        chosen = first_to_train(below_cap, how.jobs, left)
        room = {name: 2 * factors.get(name, 1) for name in chosen}
        stopped = "decided" if not opened else "cap" if not below_cap else ""
        stopped = stopped or ("max_hours" if not room else "")
        record["open"] = sorted(opened)
        if stopped:
            write_json(out / EXTENSION, record | {"stopped": stopped})
            return claims
        record["factors"] = {**factors, **room}
        write_json(out / EXTENSION, record)
        began = time.monotonic()
        claims = reproduce(names, how, True)
        record["rounds"].append({"families": room, "seconds": time.monotonic() - began})
        write_json(out / EXTENSION, record)
