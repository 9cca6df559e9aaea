"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`)."""

from __future__ import annotations

import copy
import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixit.analysis.attention import initial_logit_spread
from mixit.analysis.report import mean_uniformity
from mixit.common.errors import RunsPending, UsageError
from mixit.common.io import write_json
from mixit.config.overrides import Settings
from mixit.config.schema import RunConfig
from mixit.models.variants import variant_named
from mixit.running.launchers import LOCAL, Launch
from mixit.running.runs import train_missing
from mixit.study.comparison import ComparisonResult, Extension, LitmusResult, TableRow
from mixit.study.earlier import with_earlier_models
from mixit.study.extend import extend
from mixit.study.litmus import (
    AUTO,
    AUTO_SEEDS,
    DEFAULT_TOLERANCE,
    reading,
    undecided_by_interval,
)
from mixit.study.plan import Study
from mixit.study.results import read_results_csv, write_results_csv
from mixit.tasks import get_task
from mixit.training.resolve import resolve_config, stored_config
from mixit.training.rundir import RunSummary
from mixit.tuning import halving, rules
from mixit.tuning.records import TuningRecord


@dataclass(frozen=True)
class Comparison:
    """What a comparison trains: ``models`` on ``task`` at ``preset``, one run per seed of
    ``seeds``, with ``overrides`` on every run, into ``out/runs`` (None: nowhere yet)."""

    task: str
    models: tuple[str, ...]
    preset: str
    seeds: range
    out: Path | None
    overrides: Settings

    def configs(
        self, per_model: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[tuple[str, int], RunConfig]:
        """Every (model, seed)'s resolved config, first, so a bad model name or key fails
        before any training or timing; ``per_model`` adds a model's own overrides (its tuned
        values)."""
        return {
            (m, s): resolve_config(
                self.task, m, self.preset, s, {**self.overrides, **(per_model or {}).get(m, {})}
            )
            for m in self.models
            for s in self.seeds
        }


def comparison_of(study: Study, models: tuple[str, ...], seeds: range) -> Comparison:
    """What the one task of ``study`` trains of ``models`` over ``seeds``."""
    overrides = dict(study.overrides)
    return Comparison(study.task, models, study.preset, seeds, study.out, overrides)


TUNABLE = ("lr",)


def tunes_by_default(overrides: Settings) -> bool:
    """Whether a comparison tunes unless told not to: a ``model.arch`` model does, since the
    presets were fitted to mixit's decoder and not to it (docs/tuning.md)."""
    return str(overrides.get("model.arch", "mixit")) != "mixit"


def tune_comparison(
    plan: Comparison, launch: Launch, progress: bool | None, max_hours: float | None = None
) -> dict[str, TuningRecord]:
    """Each model of ``plan`` tuned under the protocol (``mixit.tuning.halving``), from its first
    seed's config: its rate and, unless the overrides set it, its own initialisation
    (``rules.initialisations``); every model's verdict runs then train one budget. With
    ``max_hours`` (``--max-hours``), what would end past it is left out (``halving.tune``)."""
    configs = plan.configs()
    bases = {model: configs[model, plan.seeds.start] for model in plan.models}
    fixed = any(key in plan.overrides for key in rules.INIT_KEYS)
    inits = {m: rules.initialisations(b, fixed=fixed) for m, b in bases.items()}
    runs_dir = Path(plan.out) / "runs"
    return halving.tune(
        bases,
        plan.seeds,
        runs_dir,
        inits=inits,
        launch=launch,
        progress=progress,
        max_hours=max_hours,
    )


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


def compare(
    task: str,
    models: Sequence[str] | None = None,
    preset: str = "tiny",
    seed: int = 0,
    seeds: int | str = 1,
    out: str | Path = "runs/compare",
    overrides: Settings | None = None,
    *,
    progress: bool | None = None,
    tolerance: float | None = None,
    tune: Sequence[str] | None = None,
    launch: Launch = LOCAL,
) -> ComparisonResult:
    """Train each model with seeds ``seed .. seed+seeds-1`` on the same data.

    ``tune=["lr"]`` first tunes each model under the protocol of docs/tuning.md
    (``mixit.tuning.halving``: its learning rate, budget and, for a ``model.arch`` model, the
    initialisation, on held-out training data and a seed outside ``seeds``) and trains every
    seed at the result; ``OUT/tuning.json`` and ``compare.json``'s ``tuned`` record the choice.
    ``tune=None`` tunes ``model.arch`` models only (``tunes_by_default``); ``[]`` never.
    ``seeds="auto"`` starts with ``AUTO_SEEDS[0]`` seeds and adds one at a time while a
    verdict is inconclusive by its interval alone, up to ``AUTO_SEEDS[1]``
    (``compare.json``'s ``seeds_auto`` says where it stopped).

    Every run lands in ``out/runs`` under its config's hash (``mixit.running.runs``), where
    `reproduce` keeps its runs too: a finished run of the same config, from either command, is
    read back instead of retrained. Writes and returns ``out/compare.json``, with the
    litmus reading of each variant against the standard model (``litmus``; ``tolerance``
    defaults to ``DEFAULT_TOLERANCE`` of the task's metric). ``launch``: see ``train_all``.
    """
    study = Study.of(
        [task],
        models,
        out=out,
        overrides=overrides,
        tune=tune,
        launch=launch,
        preset=preset,
        seed=seed,
        seeds=seeds,
        progress=progress,
        tolerance=tolerance,
    )
    return run_study(study)


def run_study(study: Study) -> ComparisonResult:
    """The loop every comparison runs, for the one task of ``study``: plan its runs, tune
    each model, train what is missing, judge it against the standard model and write
    ``compare.json``, which it returns (``compare`` says what each setting does)."""
    tune = settings_to_tune(study.tune, study.overrides)
    auto, seed, out = study.seeds == AUTO, study.seed, study.out
    count, most = AUTO_SEEDS if auto else (int(study.seeds), int(study.seeds))
    models = study.spectrum
    setting = {"task": study.task, "preset": study.preset, "overrides": dict(study.overrides)}
    if not auto:
        setting["seeds"] = list(range(seed, seed + int(study.seeds)))
        models = with_earlier_models(out, setting, models)
    # Every seed it may train, so that the tuning seed is none of them.
    plan = comparison_of(study, models, range(seed, seed + most))
    planned = plan.configs()  # bad input fails before tuning
    tuned = tune_comparison(plan, study.launch, study.progress, study.max_hours) if tune else {}
    if tuned:
        write_json(out / "tuning.json", {model: t.to_json() for model, t in tuned.items()})
    chosen = {model: dict(t.overrides) for model, t in tuned.items()}

    def judge(
        trial: Comparison, per_model: Mapping[str, Settings], extension: Extension | None = None
    ) -> tuple[ComparisonResult, dict[tuple[str, int], RunConfig]]:
        configs = trial.configs({m: {**chosen.get(m, {}), **per_model.get(m, {})} for m in models})
        trained = train_all(configs, out, study.progress, study.launch)
        result = comparison_result(trial, configs, trained, tuned, study.tolerance, extension)
        return result, configs

    while True:
        trial = dataclasses.replace(plan, seeds=range(seed, seed + count))
        result, configs = judge(trial, {})
        undecided = undecided_by_interval(result["litmus"])
        if not auto or count >= most or not undecided:
            break
        count += 1
    if auto:
        result["seeds_auto"] = {"start": AUTO_SEEDS[0], "maximum": most, "undecided": undecided}
    if study.extend:
        preset = planned[models[0], seed].train.steps
        result = extend(
            result,
            configs,
            preset,
            lambda per_model, record: judge(trial, per_model, record)[0],
            study.max_hours,
        )
    write_json(out / "compare.json", result)
    return result


def settings_to_tune(tune: Sequence[str] | None, overrides: Settings) -> list[str]:
    """``compare``'s ``tune``, checked: None tunes a ``model.arch`` model only."""
    if tune is None:
        return list(TUNABLE) if tunes_by_default(overrides) else []
    unknown = [name for name in tune if name not in TUNABLE]
    if unknown:
        raise UsageError(f"--tune '{unknown[0]}' is not tunable; choose from: {', '.join(TUNABLE)}")
    return list(tune)


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


def train_all(
    configs: Mapping[tuple[str, int], RunConfig],
    out: Path,
    progress: bool | None,
    launch: Launch,
) -> dict[tuple[str, int], RunSummary]:
    """Every run's summary, training the missing ones into ``out/runs`` (and writing
    ``out/results.csv``). ``launch`` submits them as a job array (``mixit.running.launchers``);
    without waiting, ``RunsPending`` says how many are still in flight."""
    trained, _ = train_missing(configs, out / "runs", progress, each=True, launch=launch)
    missing = len(configs) - len(trained)
    if missing:
        raise RunsPending(
            f"{missing} of {len(configs)} runs are not finished yet; the same command collects "
            "them once their jobs end"
        )
    write_results_csv(out / "results.csv", trained.values())
    return trained


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
