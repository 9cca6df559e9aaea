"""What a comparison (or one run, or a suite of comparisons) would cost, without training:
`compare --estimate` (along an ``--axis`` too), `train --estimate` and `suite --estimate`,
timed on this machine or predicted for a device (``mixit.cost.predict``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# typing_extensions, not typing: pydantic reads TypedDicts of Python 3.11 only from there.
from typing_extensions import TypedDict

from mixit.common.cores import busy_cores_elsewhere
from mixit.common.errors import UsageError
from mixit.common.io import checked_record, read_json
from mixit.config.overrides import Setting, Settings, with_settings
from mixit.cost.predict import fewest_pieces
from mixit.running.runs import run_dir_name
from mixit.running.workers import shared_cores_note
from mixit.study.axis import Axis
from mixit.study.compare import settings_to_tune
from mixit.study.draws import draws_estimate_line
from mixit.study.extend import EXTEND_CAP, extension_estimate_line
from mixit.study.litmus import AUTO, AUTO_SEEDS
from mixit.study.plan import Comparison, Study
from mixit.study.pricing import earliest_stop, plan_timings, priced_where, wall_seconds
from mixit.study.text import duration, name_width
from mixit.tuning.rules import (
    BUDGET_CAP,
    EDGE_BOUND,
    GRID,
    VALIDATION_FRACTION,
    halving_budgets,
)


class TunedChoice(TypedDict):
    """What an estimate reads of a model's record in tuning.json (``TuningRecord.to_json``):
    the settings tuning chose, and the seed and folder of the halving's winning run."""

    overrides: dict[str, Setting]
    seed: int
    run_dir: str


def finished_tuning(plan: Comparison) -> dict[str, dict[str, Setting]]:
    """Each model's tuned overrides from ``plan.out/tuning.json``, for the models whose record
    there is this plan's: the halving's winning run it names is the run that the plan's
    config, at the record's choice and its own budget, would be (``candidate_config``'s
    settings). A record made at other settings or models, or one that is not a tuning
    record, is not read: that model prices as untuned."""
    path = None if plan.out is None else plan.out / "tuning.json"
    if path is None or not path.is_file():
        return {}
    records = read_json(path, str(path))
    bases = plan.configs()
    tuned = {}
    for model in plan.models:
        record = records.get(model) if isinstance(records, dict) else None
        try:
            checked_record(record, TunedChoice, str(path), "")
            # The record names the halving's winner, run at the base's own budget.
            settings = {k: v for k, v in record["overrides"].items() if k != "train.steps"}
            settings["train.validation_fraction"] = VALIDATION_FRACTION
            winner = with_settings(bases[model, plan.seeds.start], settings)
            winner = dataclasses.replace(winner, seed=record["seed"])
            named = Path(record["run_dir"]).name
        except (TypeError, KeyError, ValueError, UsageError):
            continue
        if run_dir_name(winner) == named:
            tuned[model] = dict(record["overrides"])
    return tuned


def estimate_comparison(
    plan: Comparison,
    target: str | None = None,
    jobs: int = 1,
    busy: float | None = None,
    tunes: bool = False,
    steps: int | None = None,
) -> dict[str, Any]:
    """What `compare` (or, with one model and seed, `train`) would cost on this machine,
    without training or writing anything: each model's config is timed once (its seeds cost
    the same, see ``time_training``) at the threads one of ``jobs`` workers gets, or, with
    ``target``, predicted for that device with its memory (``mixit.cost.predict``); a finished run
    in ``plan.out`` costs nothing. With ``tunes``, a model already tuned there
    (``finished_tuning``) is priced at its tuned config, and its row says ``tuned``. With
    ``steps``, every run trains that budget (a doubling of ``--extend``)."""
    models, seed = plan.models, plan.seeds.start
    tuned = finished_tuning(plan) if tunes else {}
    budget = {} if steps is None else {"train.steps": steps}
    configs = plan.configs({model: {**tuned.get(model, {}), **budget} for model in models})
    runs_dir = None if plan.out is None else plan.out / "runs"
    timings = plan_timings(configs, runs_dir, target, jobs)
    rows = []
    for model in models:
        names = dict.fromkeys(run_dir_name(c) for (m, _), c in configs.items() if m == model)
        pending = [timings[name] for name in names if name in timings]
        timing = pending[0] if pending else {"step_seconds": 0.0, "run_seconds": 0.0}
        train = configs[model, seed].train
        row = {"model": model, "runs": len(pending), "steps": train.steps}
        row["tuned"] = model in tuned
        row |= {"step_seconds": timing["step_seconds"], "run_seconds": timing["run_seconds"]}
        # A run that stops early costs its share of the budget's time, at the least.
        row["least_run_seconds"] = timing["run_seconds"] * earliest_stop(train) / train.steps
        if "memory_bytes" in timing:
            row["memory_gib"] = timing["memory_bytes"] / 2**30
            row["fits"] = timing["fits"]
            row["micro_batches_to_fit"] = timing["micro_batches_to_fit"]
        rows.append(row)
    return {
        "task": plan.task,
        "preset": plan.preset,
        "device": priced_where(configs[models[0], seed], jobs, target),
        # ``busy``: other processes' cores, measured once by a caller that estimates many.
        "shared": ""
        if target
        else shared_cores_note(busy_cores_elsewhere() if busy is None else busy),
        "rows": rows,
        "total_seconds": sum(row["runs"] * row["run_seconds"] for row in rows),
        "least_seconds": sum(row["runs"] * row["least_run_seconds"] for row in rows),
        "jobs": jobs,
        "wall_seconds": wall_seconds(
            [row["run_seconds"] for row in rows for _ in range(row["runs"])], jobs, target
        ),
    }


def format_comparison_estimate(result: Mapping[str, Any]) -> str:
    """The estimate as a plain-text table, and the total with the runs one after another."""
    point = f" at {result['point']}" if result.get("point") else ""
    title = (
        f"task: {result['task']}{point} (preset {result['preset']}), {result['device']}; "
        "nothing was trained"
    )
    memory = "memory_gib" in result["rows"][0]
    width = name_width(row["model"] for row in result["rows"])
    header = f"{'model':<{width}} {'runs':>5} {'steps':>7} {'ms/step':>9} {'per run':>10}"
    header += f" {'GiB':>8}" if memory else ""
    lines = [title, header, "-" * len(header)]
    for row in result["rows"]:
        line = (
            f"{row['model']:<{width}} {row['runs']:>5} {row['steps']:>7,} "
            f"{row['step_seconds'] * 1e3:>9.1f} {duration(row['run_seconds']):>10}"
        )
        lines.append(line + (f" {row['memory_gib']:>8.2f}" if memory else ""))
    jobs = result.get("jobs", 1)
    if jobs == 1:
        lines.append(f"about {duration(result['total_seconds'])} in all, one run after another")
    else:
        lines.append(
            f"about {duration(result['wall_seconds'])} in all with {jobs} runs at once "
            f"({duration(result['total_seconds'])} of training)"
        )
    least = result.get("least_seconds", result["total_seconds"])
    if least < result["total_seconds"]:
        lines.append(
            f"as little as {duration(least)} of training if every run with a stop rule stops "
            "at the first evaluation it may"
        )
    shared = [result["shared"]] if result.get("shared") else []
    return "\n".join([*lines, *misfit_lines(result["rows"]), *shared])


def misfit_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """What to do about the models whose step needs more memory than the target has."""
    misfits = [row for row in rows if not row.get("fits", True)]
    if not misfits:
        return []
    names = ", ".join(row["model"] for row in misfits)
    pieces = fewest_pieces(row["micro_batches_to_fit"] for row in misfits)
    if pieces is None:
        return [f"{names}: more memory than the device has, even one row at a time"]
    return [
        f"{names}: more memory than the device has; train.micro_batches={pieces} fits "
        "(the same step, its batch in that many pieces; or spread it over GPUs with --nproc)"
    ]


@dataclass(frozen=True)
class TuningCost:
    """What tuning adds to an estimate, one run after another: ``least`` from the grid alone,
    each trial stopping as early as its stop rule lets it (``earliest_stop``), ``most`` with
    every edge extension, every doubling of the winner's budget up to the cap, and the verdict
    runs at the capped budget (docs/tuning.md, rules 1 and 5), none stopping early. ``done``:
    the models already tuned (``finished_tuning``), which add nothing."""

    least: float
    most: float
    done: tuple[str, ...] = ()


def tuning_seconds(rows: Sequence[Mapping[str, Any]], overrides: Settings) -> TuningCost:
    """What tuning adds to a comparison's estimate (``rows``: its per-model rows): each model's
    halving in budgets of one run, every model of an ``--arch`` comparison choosing its
    initialisation as well (docs/tuning.md, rule 6); a row marked ``tuned`` adds nothing."""
    arch = str(overrides.get("model.arch", "mixit")) != "mixit"
    inits = 2 if arch and "model.arch_init" not in overrides else 1
    grid = halving_budgets(len(GRID) * inits)
    edges = halving_budgets((len(GRID) + EDGE_BOUND - 1) * inits)
    doublings = sum(2**k for k in range(1, int(math.log2(BUDGET_CAP)) + 1))  # 2x, 4x: 2 + 4
    untuned = [row for row in rows if not row.get("tuned")]
    least = sum(row.get("least_run_seconds", row["run_seconds"]) * grid for row in untuned)
    most = sum(
        row["run_seconds"] * (edges + doublings + row["runs"] * (BUDGET_CAP - 1)) for row in untuned
    )
    return TuningCost(least, most, tuple(row["model"] for row in rows if row.get("tuned")))


def tuning_estimate_line(cost: TuningCost, max_hours: float | None = None) -> str:
    """``tuning_seconds`` as the line the estimates print, with what ``--max-hours`` bounds
    of the growth past the grid."""
    done = f"already tuned in its tuning.json: {', '.join(cost.done)}" if cost.done else ""
    if cost.most == 0 and done:
        return f"tuning adds nothing: {done} (verdict runs priced at their tuned config)"
    line = (
        f"plus tuning (docs/tuning.md): about {duration(cost.least)} one run after another from "
        f"the grid alone, each trial stopping as early as its stop rule allows (about what "
        f"the committed tuned suites spent in all, docs/cost.md), up to "
        f"{duration(cost.most)} if every model extends its grid to the bound and doubles its "
        f"budget to the cap ({BUDGET_CAP}x, the verdict runs too)"
    )
    if cost.most > cost.least:
        line += (
            f"; --max-hours {max_hours:g} grows the grid and doubles budgets only within "
            f"{duration(max_hours * 3600)} of tuning, and says what it left out"
            if max_hours is not None
            else "; --max-hours H bounds that growth to H hours of tuning"
        )
    return f"{line}; {done}" if done else line


def estimate_axis(
    plan: Comparison,
    axis: Axis,
    target: str | None = None,
    jobs: int = 1,
    tunes: bool = False,
    busy: float | None = None,
) -> list[dict[str, Any]]:
    """Each value's comparison along ``axis`` as ``estimate_comparison`` prices it, in the
    folder ``along_axis`` gives it (so its finished runs and, with ``tunes``, its finished
    tuning cost nothing), with its ``point`` (``KEY=VALUE``); ``busy``: as in
    ``estimate_comparison``."""
    if busy is None and target is None:
        busy = busy_cores_elsewhere()  # once for every value's estimate
    estimates = []
    for value in axis.values:
        folder = None if plan.out is None else plan.out / axis.folder(value)
        point = replace(plan, out=folder, overrides={**plan.overrides, axis.key: value})
        estimate = estimate_comparison(point, target, jobs, busy, tunes)
        estimates.append(estimate | {"point": f"{axis.key}={value}"})
    return estimates


def format_axis_estimate(
    axis: Axis, estimates: Sequence[Mapping[str, Any]], tuning: Sequence[TuningCost] = ()
) -> str:
    """An axis's estimate (``estimate_axis``): its values in order, as a suite's tasks are,
    and what it costs if every value trains; the axis stops earlier where the reference does
    not learn, and ``--axis auto`` where the models separate."""
    heading = f"axis {axis.key}: {len(estimates)} values"
    text = format_suite_estimate(estimates, tuning, heading)
    lines = [axis_stop_line(axis.until_separated, "the axis stops"), *left_out_lines([axis])]
    return "\n".join([text, *lines])


def format_axes_estimate(
    axes: Mapping[str, Axis],
    estimates: Sequence[Mapping[str, Any]],
    tuning: Sequence[TuningCost] = (),
) -> str:
    """A suite's estimate along its tasks' axes (``axes``: each task's): every task's values
    (``estimate_axis``, one task after another in ``estimates``) and their sum."""
    values = sum(len(axis.values) for axis in axes.values())
    heading = f"suite: {len(axes)} tasks along their axes, {values} values"
    text = format_suite_estimate(estimates, tuning, heading)
    auto = any(axis.until_separated for axis in axes.values())
    lines = [axis_stop_line(auto, "each task stops"), *left_out_lines(axes.values())]
    return "\n".join([text, *lines])


def left_out_lines(axes: Iterable[Axis]) -> list[str]:
    """The values ``--axis default`` left out, since the task refuses them."""
    return [f"left out, the task refuses it: {why}" for axis in axes for why in axis.left_out]


def axis_stop_line(until_separated: bool, who: str) -> str:
    """Why an axis's estimate is the most it may cost."""
    stops = "where the models separate (--axis auto) or " if until_separated else ""
    return f"at the most: {who} at the first value {stops}where the reference does not learn"


def format_suite_estimate(
    estimates: Sequence[Mapping[str, Any]],
    tuning: Sequence[TuningCost] = (),
    heading: str | None = None,
) -> str:
    """A suite's estimate: each task's comparison (``estimate_comparison``), each followed by
    its tuning seconds where the suite tunes (``tuning``), then the total under ``heading``
    (``suite: N tasks``). The suite compares one task after another, so the tasks' wall times
    add up."""
    blocks = [format_comparison_estimate(e) for e in estimates]
    if tuning:
        blocks = [
            f"{block}\n{tuning_estimate_line(cost)}"
            for block, cost in zip(blocks, tuning, strict=True)
        ]
    training = sum(e["total_seconds"] for e in estimates)
    wall = sum(e["wall_seconds"] for e in estimates)
    heading = heading or f"suite: {len(estimates)} tasks"
    total = f"{heading}, about {duration(wall)} of wall time"
    total += f" ({duration(training)} of training)" if wall != training else ""
    lowest = sum(e.get("least_seconds", e["total_seconds"]) for e in estimates)
    highest = training
    least, most = sum(c.least for c in tuning), sum(c.most for c in tuning)
    if most > 0:
        total += f", plus {duration(least)} to {duration(most)} of tuning one run after another"
        lowest, highest = lowest + least, highest + most
    if lowest < highest:
        total += (
            f"\nin all, {duration(lowest)} to {duration(highest)} of training one run after "
            "another: at the least every run with a stop rule (train.stop_at, train.patience, "
            "train.plateau) stops at the first evaluation it may, at the most none does"
        )
    return "\n\n".join([*blocks, total])


def estimate_study(
    study: Study, target: str | None, axis: Axis | None = None, draws: int | None = None
) -> str:
    """`compare --estimate`: the comparison of ``study``'s one task priced without training
    (its most seeds under ``--seeds auto``), with the tuning's range where it tunes; along
    ``axis``, each value's comparison in the folder the axis gives it; with ``draws``, the
    cost of that many frozen draws; under ``study.extend``, the extension's next doubling."""
    jobs, overrides = study.launch.jobs, dict(study.overrides)
    most = AUTO_SEEDS[1] if study.seeds == AUTO else study.seeds
    seeds = range(study.seed, study.seed + most)
    plan = Comparison(study.task, study.spectrum, study.preset, seeds, study.out, overrides)
    tunes = bool(settings_to_tune(study.tune, overrides))
    if axis is not None:
        costs = estimate_axis(plan, axis, target, jobs, tunes)
        tuning = [tuning_seconds(cost["rows"], overrides) for cost in costs] if tunes else []
        return format_axis_estimate(axis, costs, tuning)
    cost = estimate_comparison(plan, target, jobs, tunes=tunes)
    lines = [format_comparison_estimate(cost)]
    if tunes:
        lines.append(tuning_estimate_line(tuning_seconds(cost["rows"], overrides), study.max_hours))
    if draws is not None:
        lines.append(draws_estimate_line(cost["rows"], draws))
    if study.extend:
        lines.append(next_doubling_line(plan, cost, target, tunes))
    return "\n".join(lines)


def next_doubling_line(
    plan: Comparison, cost: Mapping[str, Any], target: str | None, tunes: bool
) -> str:
    """What ``--extend``'s next doubling of the verdict runs' one budget would cost, up to the
    cap that the preset's budget sets (a doubling already trained costs nothing, and is
    passed)."""
    steps = max(row["steps"] for row in cost["rows"])
    cap = EXTEND_CAP * plan.configs()[plan.models[0], plan.seeds.start].train.steps
    doubled = estimate_comparison(plan, target, cost["jobs"], tunes=tunes, steps=2 * steps)
    while doubled["total_seconds"] == 0 and 4 * steps <= cap:
        steps *= 2
        doubled = estimate_comparison(plan, target, cost["jobs"], tunes=tunes, steps=2 * steps)
    return extension_estimate_line(steps, cap, doubled["total_seconds"])
