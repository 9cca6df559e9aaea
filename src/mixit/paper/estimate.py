"""What a reproduction would cost before it runs (``reproduce --estimate``): each pending run
timed for a few steps here, or predicted for a target device (``--target``, ``mixit.cost.predict``),
and the wall time of the whole plan on ``--jobs`` workers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.config.schema import RunConfig
from mixit.cost.predict import GIB, Timing, fewest_pieces, get_target
from mixit.paper.ablation import plan_ablation, selection
from mixit.paper.runner import plan_reproduction, runs_trained, tuning_groups
from mixit.running.runs import run_dir_name
from mixit.running.workers import worker_threads
from mixit.study.experiment import Experiment, Reproduction, Run
from mixit.study.pricing import SHARED_STEP_FACTOR, plan_timings, shares_cores, wall_seconds
from mixit.study.text import duration
from mixit.training.devices import present_device
from mixit.tuning import rules


def estimate_reproduction(
    names: Sequence[str], how: Reproduction, target: str | None = None
) -> dict[str, Any]:
    """What ``reproduce`` with these arguments would train, and for how long, without
    training: each distinct config (seeds share one) is timed for a few steps on this machine
    at the thread count a worker would get (``mixit.running.runs.pending_timings``), or, with
    ``target`` (``mixit.cost.predict.TARGETS``), predicted for that device from its FLOPs, with its
    memory. Runs already finished in ``out`` cost nothing. The wall-time estimate assumes the
    ``jobs`` processes (one per GPU on a target) do not slow each other down; it covers
    training, not the reports.
    """
    experiments, configs = plan_reproduction(names, how)
    dir_names = {run: run_dir_name(config) for run, config in configs.items()}
    groups = {e.name: {dir_names[run] for run in runs_trained(e, how)} for e in experiments}
    planned: dict[Any, RunConfig] = dict(configs)
    budgets: dict[str, float] = {}
    if how.tune:
        tuning_runs = tuning_costs(experiments, configs, how)
        planned |= {("tuning", name): config for name, (config, _) in tuning_runs.items()}
        budgets = {name: cost for name, (_, cost) in tuning_runs.items()}
        groups["tuning (before edges, early stops, doubled budgets)"] = set(budgets)
    return _estimate("experiments", groups, planned, how, target, budgets)


def tuning_costs(
    experiments: Sequence[Experiment], configs: Mapping[Run, RunConfig], how: Reproduction
) -> dict[str, tuple[RunConfig, float]]:
    """What ``reproduce --tune lr`` trains before the verdict runs: per group of runs that
    differ only in their seed, the run directory name of its grid's middle rate on the
    tuning seed, that config, and the budgets of one run its halving trains (its grid once per
    initialisation its experiment tunes among). A group whose middle run is finished in
    ``how.out`` costs nothing: an earlier call tuned it."""
    seed = rules.tuning_seed(how.seed_range)
    costs = {}
    for (_, inits), runs in tuning_groups(experiments, configs, how)[0].items():
        middle = rules.Candidate(0, inits[0] if inits else None)
        config = rules.candidate_config(configs[runs[0]], middle, seed)
        cost = rules.halving_budgets(len(rules.GRID) * max(1, len(inits)))
        costs[run_dir_name(config)] = (config, cost)
    return costs


def estimate_ablation(
    differences: Sequence[str] | None,
    claims: Sequence[str] | None,
    how: Reproduction,
    target: str | None = None,
) -> dict[str, Any]:
    """``estimate_reproduction`` for ``reproduce ablation``: per difference (the equations'
    construction first; all differences and claims when None), the runs it needs and what
    those not yet finished cost. A run a difference leaves unchanged is the equations' run and
    counts in both rows."""
    _, planned = plan_ablation(*selection(differences, claims, how.scale), how)
    groups: dict[str, set[str]] = {}
    for (difference, _run), config in planned.items():
        groups.setdefault(difference, set()).add(run_dir_name(config))
    return _estimate("differences", groups, planned, how, target)


def _estimate(
    grouped_by: str,
    groups: Mapping[str, set[str]],
    configs: Mapping[Any, Any],
    how: Reproduction,
    target: str | None,
    budgets: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The estimate of ``configs``, each of ``groups`` (run directory names, under the key
    ``grouped_by``) costed on its own, and the whole once; a run named in ``budgets`` costs
    that many of its runs (a tuning grid's halving)."""
    runs_dir = Path(how.out) / "runs"
    timings = plan_timings(configs, runs_dir, target, how.jobs, how.progress)
    budgets = budgets or {}
    seconds = {
        name: timing["run_seconds"] * budgets.get(name, 1.0) for name, timing in timings.items()
    }
    first = next(iter(configs.values()), None)
    shared = target is None and first is not None and shares_cores(first, how.jobs)
    result = {
        "scale": how.scale,
        "seeds": how.seeds,
        "jobs": how.jobs,
        "threads_per_job": worker_threads(how.jobs),
        "step_factor": SHARED_STEP_FACTOR if shared else 1.0,
        "device": str(present_device("auto")),
        grouped_by: {
            group: {
                "runs": len(names),
                "runs_to_train": len(names & seconds.keys()),
                "train_seconds": sum(seconds[name] for name in names & seconds.keys()),
            }
            for group, names in groups.items()
        },
        "runs_to_train": len(seconds),
        "configs_timed": len({id(timing) for timing in timings.values()}),
        "train_seconds": sum(seconds.values()),
        "wall_seconds": wall_seconds(list(seconds.values()), how.jobs, target),
    }
    if target is not None:
        result |= memory_summary(timings, target)
    return result


def memory_summary(timings: Mapping[str, Timing], target: str) -> dict[str, Any]:
    """The target device and the largest run's memory, and the runs that do not fit."""
    device = get_target(target)
    largest = max((t["memory_bytes"] for t in timings.values()), default=0)
    return {
        "device": f"predicted from FLOPs for {device.describe()}",
        "target": device.name,
        "memory_gib_largest_run": largest / GIB,
        "memory_gib_device": device.memory_gib,
        "runs_not_fitting": sorted(name for name, t in timings.items() if not t["fits"]),
        "micro_batches_to_fit": fewest_pieces(t["micro_batches_to_fit"] for t in timings.values()),
    }


def format_reproduction_estimate(estimate: Mapping[str, Any]) -> str:
    """``estimate``'s result as a markdown table (a row per experiment, or per difference of
    an ablation) and a closing line."""
    grouped_by = "differences" if "differences" in estimate else "experiments"
    rows = [
        f"| {name} | {e['runs']} | {e['runs_to_train']} | {e['train_seconds']:,.0f} |"
        for name, e in estimate[grouped_by].items()
    ]
    return "\n".join(
        [
            f"Estimated training at `{estimate['scale']}` scale, {estimate['seeds']} seed(s), "
            f"on {estimate['device']}"
            + (
                ""
                if "target" in estimate
                else f" ({estimate['threads_per_job']} thread(s) per job"
                + shared_pace_note(estimate)
                + ")"
            )
            + ":",
            "",
            f"| {grouped_by[:-1]} | runs | to train | seconds (one job) |",
            "|---|---:|---:|---:|",
            *rows,
            "",
            f"{estimate['runs_to_train']} runs to train ({estimate['configs_timed']} configs "
            f"{'predicted' if 'target' in estimate else 'timed'}): "
            f"{estimate['train_seconds']:,.0f} s in one job, about "
            f"{duration(estimate['wall_seconds'])} of wall time with --jobs {estimate['jobs']}"
            f"{own_devices_note(estimate)} "
            f"(runs shared by {grouped_by} count in each row, once in the total).",
            *memory_lines(estimate),
        ]
    )


def shared_pace_note(estimate: Mapping[str, Any]) -> str:
    """Where runs share the CPU's cores, the pace a step was priced at (``plan_timings``)."""
    factor = estimate.get("step_factor", 1.0)
    if factor == 1.0:
        return ""
    return f"; a step x{factor:.2f} for runs sharing the cores, docs/cost.md"


def own_devices_note(estimate: Mapping[str, Any]) -> str:
    """Where several jobs are predicted for a GPU: the wall time assumes a GPU per job.
    Jobs sharing one GPU gain little from it (on one H100, 8 jobs took 0.83 of the one-job
    prediction in results/width-h100, 6 jobs 0.55 in results/width-depth-h100)."""
    if estimate.get("target", "cpu") == "cpu" or estimate["jobs"] == 1:
        return ""
    return (
        f", each job on its own {estimate['target']} (jobs sharing one took a half to the whole "
        "of the one-job time)"
    )


def memory_lines(estimate: Mapping[str, Any]) -> list[str]:
    if "memory_gib_largest_run" not in estimate:
        return []
    misfits = estimate["runs_not_fitting"]
    return [
        f"The largest run needs about {estimate['memory_gib_largest_run']:,.1f} GiB; one "
        f"{estimate['target']} has {estimate['memory_gib_device']:,.0f} GiB"
        + (f"; {len(misfits)} runs do not fit: {', '.join(misfits[:3])}" if misfits else ".")
        + micro_batch_hint(estimate)
    ]


def micro_batch_hint(estimate: Mapping[str, Any]) -> str:
    """How to make the runs that do not fit fit, where splitting their batches can."""
    pieces = estimate.get("micro_batches_to_fit")
    if not estimate["runs_not_fitting"]:
        return ""
    if pieces is None:
        return " (not even one row at a time)"
    return f" (train.micro_batches={pieces} fits them: the same steps, a batch in {pieces} pieces)"
