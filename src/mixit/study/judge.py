"""A comparison judged: compare.json's rows from its trained runs, each read at its best
held-out point, the litmus reading against the standard model (``comparison_result``), and a
committed compare.json read again under the rules in force (``judged_again``)."""

from __future__ import annotations

import copy
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path

from mixit.analysis.attention import initial_logit_spread
from mixit.analysis.report import mean_uniformity
from mixit.common.errors import UsageError
from mixit.config.schema import RunConfig
from mixit.models.variants import variant_named
from mixit.study.comparison import ComparisonResult, Extension, LitmusResult, TableRow
from mixit.study.litmus import DEFAULT_TOLERANCE, reading
from mixit.study.plan import Comparison
from mixit.study.results import read_results_csv
from mixit.tasks import get_task
from mixit.training.resolve import stored_config
from mixit.training.rundir import RunSummary
from mixit.tuning import rules
from mixit.tuning.records import TuningRecord


def comparison_result(
    plan: Comparison,
    configs: Mapping[tuple[str, int], RunConfig],
    trained: Mapping[tuple[str, int], RunSummary],
    tuned: Mapping[str, TuningRecord],
    tolerance: float | None,
    extension: Extension | None = None,
) -> ComparisonResult:
    """compare.json: each model's row over the seeds, the chance level, what tuning chose,
    and the litmus reading against the standard model (with ``extension``, the budget
    ``--extend`` reached, which the reading weighs against a tuning's cap)."""
    spec, first = get_task(plan.task), plan.seeds[0]
    by_model = {model: [trained[model, s] for s in plan.seeds] for model in plan.models}
    rows = [table_row(model, summaries, spec.metric) for model, summaries in by_model.items()]
    for row in rows:
        model = row["model"]
        runs = [(Path(trained[model, s]["run_dir"]), configs[model, s]) for s in plan.seeds]
        read_at_best(row, runs)
        row["rising"] = [
            rules.rising_at_end(run_dir, config, stop)
            for (run_dir, config), stop in zip(runs, row["stopped"], strict=True)
        ]
        if variant_named(model).frozen_attention:
            row["logit_spread_at_init"] = initial_logit_spread(configs[model, first])
    chances = [s["chance"] for summaries in by_model.values() for s in summaries if "chance" in s]
    result: ComparisonResult = {
        "task": plan.task,
        "metric": spec.metric,
        "higher_is_better": spec.higher_is_better,
        "preset": plan.preset,
        "seeds": list(plan.seeds),
        "overrides": dict(plan.overrides),
        "chance": statistics.fmean(chances) if chances else None,
        "rows": rows,
    }
    # train.validation_fraction > 0 scores every run on held-out training rows, not the test
    # split: the table and compare.json say so instead of calling the number a test score.
    if any(s.get("evaluated_on") == "validation" for ss in by_model.values() for s in ss):
        result["evaluated_on"] = "validation"
    if tuned:
        result["tuned"] = {model: t.to_json() for model, t in tuned.items()}
    if extension is not None:
        result["extension"] = extension
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE.get(spec.metric, 0.02)
    steps = configs.get(("standard", first), configs[plan.models[0], first]).train.steps
    result["litmus"] = reading(result, tolerance, steps)
    if "standard" in tuned and tuned["standard"].learned is False:
        result["litmus"] = not_learned_at_any_rate(result["litmus"], tuned["standard"])
    return result


def not_learned_at_any_rate(litmus: LitmusResult, record: TuningRecord) -> LitmusResult:
    """The litmus reading when the tuned reference learned nothing on validation at any rate
    of its grid: no verdict, with the rates and budgets tried as the cause."""
    rates = ", ".join(f"{point.lr:.3g}" for point in record.validation)
    steps = ", ".join(str(b["steps"]) for b in record.budgets)
    uniformity = mean_uniformity(record.run_dir)
    attention = (
        f"; its attention's uniformity {uniformity:.2f} (1: plain averaging)"
        if uniformity is not None
        else ""
    )
    cause = (
        f"standard did not learn at any rate of the grid (validation on seed {record.seed}; "
        f"rates {rates}; budgets {steps} steps{attention})"
    )
    return {
        "tolerance": litmus["tolerance"],
        "rows": [],
        "no_reference": [cause, *litmus.get("no_reference", [])],
        "next": "a larger width (model.n_embd), or a budget beyond the protocol's cap of "
        f"{rules.BUDGET_CAP}x the preset's steps (train.steps)",
    }


def read_at_best(row: TableRow, runs: Sequence[tuple[Path, RunConfig]]) -> None:
    """``row``'s values read at each run's best held-out point (``rules.best_held_out``), with
    the step each was read at (``read_at``), where its runs evaluated a held-out stop split;
    a reference that peaks early is then read at its peak. The last evaluation stays in
    results.csv and in the run's summary."""
    points = [rules.best_held_out(run_dir, config) for run_dir, config in runs]
    if not any(points):
        return
    row["values"] = [
        value if point is None else point[0]
        for value, point in zip(row["values"], points, strict=True)
    ]
    row["read_at"] = [
        steps if point is None else point[1]
        for steps, point in zip(row["steps_run"], points, strict=True)
    ]
    row["mean"] = statistics.fmean(row["values"])
    row["std"] = statistics.stdev(row["values"]) if len(row["values"]) > 1 else 0.0


def table_row(model: str, summaries: Sequence[RunSummary], metric: str) -> TableRow:
    """One model's row of compare.json from its seeds' summaries."""
    values = [summary["metrics"][metric] for summary in summaries]
    return {
        "model": model,
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "values": values,
        "params_trainable": summaries[0]["params_trainable"],
        "train_seconds": statistics.fmean(s["train_seconds"] for s in summaries),
        "steps_run": [s["steps_run"] for s in summaries],
        "stopped": [s["stopped"] for s in summaries],
    }


def judged_again(result: ComparisonResult, folder: Path) -> ComparisonResult:
    """A committed ``compare.json``'s litmus reading under the current rules (docs/reproduce.md,
    "Reading rules"), nothing retrained: its rows, with each verdict run's "still rising at
    its budget's end" read from the run records kept beside it (``folder/results.csv`` and
    ``folder/runs/*/{config.json,metrics.jsonl}``), and its tuning records' ``capped``
    (``rules.capped_record``). A run whose records are not kept is refused (UsageError): it
    would read as finished, and its verdict as more than it is."""
    again = copy.deepcopy(dict(result))
    rising, budgets, kept, unkept = {}, {}, {}, []
    for row in read_results_csv(folder / "results.csv"):
        run_dir = folder / "runs" / Path(row["run_dir"]).name
        try:
            config = stored_config(json.loads((run_dir / "config.json").read_text()))
        except (OSError, ValueError, UsageError):
            unkept.append(run_dir.name)
            continue
        up = rules.rising_at_end(run_dir, config, row["stopped"])
        rising[row["model"], int(row["seed"])] = up
        budgets[row["model"]] = config.train.steps
        kept[row["model"], int(row["seed"])] = (run_dir, config)
    if unkept:
        raise UsageError(
            f"{folder} lacks the records of {len(unkept)} of its runs (first: {unkept[0]}), "
            "which the reading rules read; restore them first (mixit records restore KEPT "
            "OUT), or run it again without --report"
        )
    for row in again["rows"]:
        row["rising"] = [rising.get((row["model"], seed), False) for seed in again["seeds"]]
        runs = [kept.get((row["model"], seed)) for seed in again["seeds"]]
        if all(runs) and "steps_run" in row:
            read_at_best(row, runs)
    for record in again.get("tuned", {}).values():
        record["capped"] = rules.capped_record(record)
    # The budget to try next, as compare names it: the reference's (every model's, under one
    # budget per task).
    steps = budgets.get("standard", next(iter(budgets.values()), 0))
    again["litmus"] = reading(again, result["litmus"]["tolerance"], steps=steps)
    if again.get("tuned", {}).get("standard", {}).get("learned") is False:
        standard = TuningRecord.from_json(again["tuned"]["standard"])
        again["litmus"] = not_learned_at_any_rate(again["litmus"], standard)
    return again
