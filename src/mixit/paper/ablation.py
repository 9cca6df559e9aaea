"""Which detail of the authors' code decides which claim: ``mixit reproduce ablation``.

Each *difference* is one group of options set to the authors' values on top of the equations'
construction (docs/constructions.md), for exactly the (task, model) pairs the authors'
construction gives it to: a MixiT-only option leaves the softmax runs as they are, so they are
trained once and shared with the plain reproduction in the same output directory. The whole
``authors`` construction is the last difference. For every difference the experiments that
judge the chosen claims are reported as ``reproduce`` would, and the table gives, per claim,
the change of MixiT's metric against the equations (mean and standard deviation over seeds of
the paired per-seed difference) and whether the verdict flips.

The flips come before an experiment's own settings: where an experiment fixes an option itself
(Table 5's per-head W^M spread, Table 6's plain residual for MixiT), the flip leaves it alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import make_dir, write_json, write_text
from mixit.models.variants import SPECTRUM
from mixit.paper.ablation_report import (
    ablation_markdown,
    annotate_claims,
    judge,
)
from mixit.paper.claims import FINDINGS, experiment_of
from mixit.paper.differences import (
    DEFAULT_DIFFERENCES,
    EQUATIONS,
    check_differences,
    flips,
)
from mixit.paper.registry import EXPERIMENTS
from mixit.paper.runner import plan_reproduction
from mixit.running.runs import train_missing
from mixit.study.experiment import Reproduction, Run
from mixit.study.setting import recorded_overrides


def plan_ablation(
    differences: Sequence[str], claims: Sequence[str], how: Reproduction
) -> tuple[list[str], dict[tuple[str, Run], Any]]:
    """The experiments judging ``claims`` and the config of every (difference, run) they need;
    the equations' runs come first, under the name ``EQUATIONS``. ``how.overrides`` apply to
    every run, after everything else (as ``reproduce``'s)."""
    if how.tuned is not None:
        raise UsageError("the ablation takes no --tuned: each row sets its own options")
    names = sorted({experiment_of(c) for c in claims}, key=list(EXPERIMENTS).index)
    plans = [EXPERIMENTS[name].plan(how.scale, how.seed_range) for name in names]
    tasks = {run.task for plan in plans for run in plan}
    configs: dict[tuple[str, Run], Any] = {}
    for difference in (EQUATIONS, *differences):
        flipped = {
            (task, model): {} if difference == EQUATIONS else flips(difference, task, model)
            for task in tasks
            for model in SPECTRUM
        }
        _, planned = plan_reproduction(names, how, flipped)
        configs |= {(difference, run): config for run, config in planned.items()}
    return names, configs


def ablated_claims(scale: str) -> list[str]:
    """The claims the ablation can follow: those whose experiment names the runs they turn on
    (``Experiment.headlines``)."""
    return [f.id for f in FINDINGS if f.id in EXPERIMENTS[f.experiment].headlines(scale, range(1))]


def selection(
    differences: Sequence[str] | None, claims: Sequence[str] | None, scale: str
) -> tuple[list[str], list[str]]:
    """The differences and claims an ablation covers at ``scale``: those named (checked), else
    all."""
    covered = ablated_claims(scale)
    unknown = [c for c in claims or () if c not in covered]
    if unknown:
        raise UsageError(
            f"the ablation does not cover claim '{unknown[0]}'; choose from: {', '.join(covered)}"
        )
    return check_differences(differences or DEFAULT_DIFFERENCES), list(claims or covered)


def ablate(
    differences: Sequence[str] | None,
    claims: Sequence[str] | None,
    how: Reproduction,
    train: bool = True,
) -> dict[str, Any]:
    """Train what the ablation needs into ``OUT/runs`` and write ``OUT/ablation/report.md``
    and ``results.json``: per difference and claim, the verdict and the shift of the claim's
    MixiT numbers against the equations' construction. With ``train=False`` nothing is
    trained and the report covers the claims and differences whose runs are finished
    (``reportable``)."""
    differences, claims = selection(differences, claims, how.scale)
    names, configs = plan_ablation(differences, claims, how)
    out = Path(how.out)
    started = time.perf_counter()
    summaries, trained = train_missing(
        configs, out / "runs", how.progress, train, launch=how.launch
    )
    wall = time.perf_counter() - started
    claims, ready, left_out = reportable(differences, claims, how, summaries)
    if not train:
        check_nothing_dropped(out / "ablation" / "results.json", claims, ready)
    unfinished = [d for d in differences if d not in ready]
    differences = ready
    names = [name for name in names if name in {experiment_of(c) for c in claims}]
    folder = make_dir(out / "ablation")
    judged = judge([EQUATIONS, *differences], claims, names, how, summaries, folder)
    cost = training_cost(summaries, wall, trained, how.jobs)
    markdown = ablation_markdown(judged, claims, how, cost)
    if unfinished or left_out:
        markdown += (
            "\n\nNot finished yet, so not in the table: "
            + ", ".join([*unfinished, *(f"claim {c}" for c in left_out)])
            + " (the same command without --no-train trains them).\n"
        )
    results = {"scale": how.scale, "seeds": how.seeds, "first_seed": how.first_seed}
    results |= {
        "overrides": dict(recorded_overrides(how.overrides)),
        "claims": claims,
        "claims_left_out": left_out,
    }
    results["differences"] = judged.results(claims)
    results |= {**cost, "unfinished": unfinished}
    write_text(folder / "report.md", markdown)
    write_json(folder / "results.json", results)
    annotate_claims(out)
    return results


def check_nothing_dropped(path: Path, claims: Sequence[str], differences: Sequence[str]) -> None:
    """Before ``--no-train`` writes the ablation's report: refuse (UsageError) when the stored
    ``results.json`` holds claims or differences this call cannot report, as their runs are
    not all in OUT/runs (gone, or planned otherwise by this version): it would drop them."""
    try:
        stored = json.loads(path.read_text()) if path.is_file() else {}
        had_claims, had = list(stored.get("claims", [])), list(stored.get("differences", {}))
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise UsageError(f"--no-train would replace {path}: it is damaged ({error})") from None
    dropped = [c for c in had_claims if c not in claims]
    dropped += [d for d in had if d not in (EQUATIONS, *differences)]
    if dropped:
        raise UsageError(
            f"--no-train would drop {', '.join(map(str, dropped))} from {path}: their runs "
            "are not all in the output's runs/ (the same command without --no-train trains them)"
        )


def reportable(
    differences: Sequence[str],
    claims: Sequence[str],
    how: Reproduction,
    summaries: Mapping[tuple[str, Run], Any],
) -> tuple[list[str], list[str], list[str]]:
    """What a report can say while the ablation trains: the claims whose experiment's
    equations' runs are all finished, the differences whose runs for those claims are, and the
    claims left out. None ready is a UsageError."""

    def finished(difference: str, claim: str) -> bool:
        plan = EXPERIMENTS[experiment_of(claim)].plan(how.scale, how.seed_range)
        return all((difference, run) in summaries for run in plan)

    ready = [c for c in claims if finished(EQUATIONS, c)]
    if not ready:
        raise UsageError(
            f"no claim's equations' runs of the ablation in {how.out} are all finished yet; "
            "run it without --no-train"
        )
    done = [d for d in differences if all(finished(d, c) for c in ready)]
    return ready, done, [c for c in claims if c not in ready]


def training_cost(
    summaries: Mapping[Any, Mapping[str, Any]], wall: float, trained: int, jobs: int
) -> dict[str, Any]:
    """This call's wall time and runs trained, and the training seconds of every distinct run
    in the table, summed (as measured when each was trained, by whichever call trained it):
    the ablation's cost even when several calls trained it."""
    by_dir = {s["run_dir"]: s.get("train_seconds", 0.0) for s in summaries.values()}
    return {
        "train_wall_seconds": wall,
        "runs_trained": trained,
        "jobs": jobs,
        "runs": len(by_dir),
        "run_seconds": sum(by_dir.values()),
    }
