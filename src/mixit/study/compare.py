"""Train the spectrum on one task and tabulate its headline metric (`mixit compare`): the loop
every comparison runs (``run_study``): plan (``mixit.study.plan.Comparison``), tune, train what
is missing, judge (``mixit.study.judge``), write compare.json."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from mixit.common.errors import RunsPending, UsageError
from mixit.common.io import write_json
from mixit.config.overrides import Settings
from mixit.config.schema import RunConfig
from mixit.running.launchers import LOCAL, Launch
from mixit.running.runs import train_missing
from mixit.study.comparison import ComparisonResult, Extension
from mixit.study.earlier import with_earlier_models
from mixit.study.extend import extend
from mixit.study.judge import comparison_result
from mixit.study.litmus import (
    AUTO,
    AUTO_SEEDS,
    undecided_by_interval,
)
from mixit.study.plan import Comparison, Study, comparison_of, with_choices
from mixit.study.results import write_results_csv
from mixit.training.rundir import RunSummary
from mixit.tuning import halving, rules
from mixit.tuning.records import TuningRecord

TUNABLE = ("lr",)


def tunes_by_default(overrides: Settings) -> bool:
    """Whether a comparison tunes unless told not to: a ``model.arch`` model does, since the
    presets were fitted to mixit's decoder and not to it (docs/tuning.md)."""
    return str(overrides.get("model.arch", "mixit")) != "mixit"


def tune_comparison(
    plan: Comparison,
    configs: Mapping[tuple[str, int], RunConfig],
    launch: Launch,
    progress: bool | None,
    max_hours: float | None = None,
) -> dict[str, TuningRecord]:
    """Each model of ``plan`` tuned under the protocol (``mixit.tuning.halving``), from its first
    seed's config (of ``configs``, the plan's): its rate and, unless the overrides set it, its
    own initialisation (``rules.initialisations``); every model's verdict runs then train one
    budget. With ``max_hours`` (``--max-hours``), what would end past it is left out
    (``halving.tune``)."""
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
    launch, progress = study.launch, study.progress
    tuned = tune_comparison(plan, planned, launch, progress, study.max_hours) if tune else {}
    if tuned:
        write_json(out / "tuning.json", {model: t.to_json() for model, t in tuned.items()})
    chosen = {model: dict(t.overrides) for model, t in tuned.items()}

    def judge(
        trial: Comparison, per_model: Mapping[str, Settings], extension: Extension | None = None
    ) -> tuple[ComparisonResult, dict[tuple[str, int], RunConfig]]:
        asked = {key: config for key, config in planned.items() if key[1] in trial.seeds}
        configs = with_choices(
            asked, {m: {**chosen.get(m, {}), **per_model.get(m, {})} for m in models}
        )
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
