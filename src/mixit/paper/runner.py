"""``mixit reproduce``: plan the experiments' runs, train the missing ones, write the reports.

Run directories live in ``OUT/runs/`` under a name that hashes the resolved config, so a run
shared by two experiments trains once, a finished run is never retrained, and an interrupted
reproduction resumes with the runs it had not finished.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject, make_dir, write_json, write_text
from mixit.config.overrides import with_settings
from mixit.config.schema import MAX_SEED, RunConfig
from mixit.paper.ablation_report import dependence
from mixit.paper.extend import extended, family, read_extension
from mixit.paper.registry import EXPERIMENTS, QUESTIONS
from mixit.paper.rereading import check_rereadable, not_reported
from mixit.paper.verdicts import changed_settings_note, record_claims, tuning_caption
from mixit.running.runs import run_dir_name, train_missing
from mixit.study.claim import (
    Claim,
)
from mixit.study.experiment import (
    SCALES,
    Experiment,
    Reproduction,
    Run,
)
from mixit.study.measures import seeds_text
from mixit.study.references import (
    recorded_summaries,
    unfinished_by_task,
    unlearned_references,
)
from mixit.study.results import write_results_csv
from mixit.study.setting import Setting, recorded_overrides
from mixit.study.text import trained_as
from mixit.study.timing import (
    CallTiming,
    earlier_calls,
    earlier_timing,
    experiment_seconds,
    stops_note,
)
from mixit.study.tuned_presets import capped_groups, identity, uncovered, with_choices
from mixit.training.resolve import validate
from mixit.tuning import halving, rules
from mixit.tuning.presets import choices, presets_label, tuned_presets
from mixit.tuning.sweep import read_best


def judged_under(how: Reproduction) -> Setting:
    """What the verdicts depend on beyond the rules, as claims.json and results.json say."""
    return Setting(
        how.scale,
        how.seeds,
        how.first_seed,
        recorded_overrides(how.overrides),
        None if how.tuned is None else str(how.tuned),
        "protocol (docs/tuning.md)" if how.tune else None,
        presets_label(how.scale) if presets_apply(how) else None,
    )


def plan_reproduction(
    names: Sequence[str],
    how: Reproduction,
    tuned: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
) -> tuple[list[Experiment], dict[Run, RunConfig]]:
    """The named experiments (``["all"]``: every one) and the resolved config of each run they
    plan; a bad name or setting fails here, before anything trains. ``tuned``, per task and
    model, stands in for ``how.tuned``'s ``best.json`` (the ablation's flipped options)."""
    scale, seeds = how.scale, how.seed_range
    if scale not in SCALES:
        raise UsageError(f"--scale '{scale}' is not one of: {', '.join(SCALES)}")
    if how.seeds < 1 or how.jobs < 1:
        raise UsageError(f"--seeds and --jobs must be >= 1, got {how.seeds} and {how.jobs}")
    if not 0 <= how.first_seed < MAX_SEED:
        raise UsageError(f"--seed must be in [0, 2^62), got {how.first_seed}")
    if list(names) == ["all"]:
        names = list(EXPERIMENTS)
    known = {**EXPERIMENTS, **QUESTIONS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise UsageError(f"unknown experiment '{unknown[0]}'; choose 'all' or: {', '.join(known)}")
    experiments = [known[name] for name in names]
    if tuned is None:
        tuned = read_best(how.tuned) if how.tuned is not None else {}
    configs = {
        run: run.config(scale, how.overrides, tuned)
        for e in experiments
        for run in e.every_run(scale, seeds)
    }
    trained = {run for e in experiments for run in runs_trained(e, how)}
    configs = {run: config for run, config in configs.items() if run in trained}
    if presets_apply(how):
        # What the user set, on the command line or in best.json, wins over the presets.
        kept = {run: [*how.overrides, *tuned.get((run.task, run.model), {})] for run in configs}
        covered = {run for e in experiments if e.tuned_presets for run in e.every_run(scale, seeds)}
        chosen = with_choices(
            {r: c for r, c in configs.items() if r in covered}, tuned_presets(scale), scale, kept
        )
        configs = {run: chosen.get(run, config) for run, config in configs.items()}
    return experiments, configs


def runs_trained(experiment: Experiment, how: Reproduction) -> list[Run]:
    """The runs ``reproduce`` trains for ``experiment``: its plan, and its rows past the
    paper's where they can be tuned: always when the call tunes (or trains untuned), under the
    scale's tuned presets only where they cover every one of them (docs/reviewers.md)."""
    planned = experiment.plan(how.scale, how.seed_range)
    beyond = experiment.beyond(how.scale, how.seed_range)
    if beyond and presets_apply(how) and uncovered(beyond, how.scale):
        return planned
    return [*planned, *beyond]


def planned_configs(
    names: Sequence[str], how: Reproduction
) -> tuple[list[Experiment], dict[Run, RunConfig]]:
    """The plan's configs as ``reproduce`` trains them, nothing trained: its tuning as
    ``OUT/tuning.json`` stored it (``--tune lr``), its families at their extension's factors."""
    experiments, configs = plan_reproduction(names, how)
    if how.tune:
        configs = stored_tuning(configs, Path(how.out), how.scale)
    return experiments, extended(configs, experiments, how)


def presets_apply(how: Reproduction) -> bool:
    """Whether the runs train under the scale's tuned presets: by default, unless this call
    tunes again from the task presets (``--tune lr``) or asks for their own rates
    (``--no-tune``)."""
    return how.presets and not how.tune and bool(tuned_presets(how.scale))


TuningGroup = tuple[str, tuple[str, ...]]
# The runs that train one budget: a task and the overrides its experiment plans it with.
Family = tuple[str, tuple[tuple[str, Any], ...]]


def tuning_groups(
    experiments: Sequence[Experiment], configs: Mapping[Run, RunConfig], how: Reproduction
) -> tuple[dict[TuningGroup, list[Run]], dict[Run, list[str]]]:
    """The plan's runs that differ only in their seed, grouped under (their config without
    the seed, the initialisations their experiment tunes among), and the experiments that
    plan each run."""
    inits_of: dict[Run, tuple[str, ...]] = {}
    experiments_of: dict[Run, list[str]] = {}
    for e in experiments:
        for run in e.every_run(how.scale, how.seed_range):
            inits_of[run] = e.tune_inits
            experiments_of.setdefault(run, []).append(e.name)
    groups: dict[TuningGroup, list[Run]] = {}
    for run, config in configs.items():
        identity = json.dumps({**config.result_dict(), "seed": 0}, sort_keys=True)
        groups.setdefault((identity, inits_of[run]), []).append(run)
    return groups, experiments_of


def tune_plan(
    experiments: Sequence[Experiment],
    configs: Mapping[Run, RunConfig],
    how: Reproduction,
    floors: Mapping[Family, int] | None = None,
) -> dict[Run, RunConfig]:
    """The plan's configs under the tuning protocol (``mixit.tuning.halving``): each group of runs
    that differ only in their seed (``tuning_groups``) is tuned once on the tuning seed (among
    its experiment's ``tune_inits`` as well) and its runs take the choice, every group of a
    task and setting (its ``Family``) one budget, at least ``floors[family]`` where given.
    Writes ``OUT/tuning.json``: each group's task, model, experiments and record."""
    groups, experiments_of = tuning_groups(experiments, configs, how)
    bases = {key: configs[runs[0]] for key, runs in groups.items()}
    inits = {
        key: rules.initialisations(
            bases[key], key[1], any(k in dict(runs[0].overrides) for k in rules.INIT_KEYS)
        )
        for key, runs in groups.items()
    }
    # One budget per task and setting: the groups that differ only in their model.
    families = {key: (runs[0].task, runs[0].overrides) for key, runs in groups.items()}
    records = halving.tune(
        bases,
        how.seed_range,
        Path(how.out) / "runs",
        inits=inits,
        families=families,
        launch=how.launch,
        progress=how.progress,
        floors=floors,
    )
    tuned = {}
    for key, runs in groups.items():
        for run in runs:
            config = with_settings(configs[run], records[key].overrides)
            validate(config)
            tuned[run] = config
    write_json(
        Path(how.out) / "tuning.json",
        [
            {
                "task": runs[0].task,
                "model": runs[0].model,
                "run_overrides": dict(runs[0].overrides),
                "experiments": sorted({name for run in runs for name in experiments_of[run]}),
                **records[key].to_json(),
            }
            for key, runs in groups.items()
        ],
    )
    return tuned


def stored_tuning(configs: Mapping[Run, RunConfig], out: Path, scale: str) -> dict[Run, RunConfig]:
    """The plan's configs under the choices an earlier ``reproduce --tune lr`` stored in
    ``OUT/tuning.json`` (for ``--no-train``); a run it has no choice for stops the plan."""
    try:
        chosen = choices(json.loads((out / "tuning.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(
            f"--tune lr --no-train reads {out}/tuning.json, which a tuned reproduction writes; "
            "it is missing or damaged"
        ) from None
    return with_choices(configs, chosen, scale)


def reproduce(names: Sequence[str], how: Reproduction, train: bool = True) -> list[Claim]:
    """Run the named experiments (or ``["all"]``) and write their reports and the claims.

    ``how.overrides`` apply to every training run on top of the experiment's own, e.g.
    ``{"train.steps": 50}`` for a quick look. ``train=False`` trains nothing, and reports the
    experiments whose runs are all finished or judges them again from their ``results.json``
    (``rereading``: never writing less than it found, nor timing.json).
    """
    out = Path(how.out)
    experiments, configs = plan_reproduction(names, how)
    tuning_seconds = 0.0
    if how.tune and train:
        started = time.perf_counter()
        configs = tune_plan(experiments, configs, how)
        tuning_seconds = time.perf_counter() - started
    elif how.tune:
        configs = stored_tuning(configs, out, how.scale)
    configs = extended(configs, experiments, how)  # reproduce --extend's families
    start = time.perf_counter()
    summaries, trained = train_missing(
        configs, out / "runs", how.progress, train, launch=how.launch
    )
    setting = judged_under(how)
    if not train:
        check_rereadable(experiments, how, summaries.keys(), setting)
    write_results_csv(out / "results.csv", summaries.values(), keep_earlier=True)
    # Claims read each run at its best held-out point; results.csv keeps its last evaluation.
    summaries = {
        run: rules.summary_at_best(summary, configs[run]) for run, summary in summaries.items()
    }
    this_call = CallTiming(
        train_wall_seconds=time.perf_counter() - start,
        jobs=how.jobs,
        runs_trained=trained,
        experiments=[e.name for e in experiments],
        scale=how.scale,
        seeds=how.seeds,
    )
    if how.tune:
        this_call["tuning_wall_seconds"] = tuning_seconds
    earlier = earlier_timing(out)
    # The other experiments' seconds stay as the calls that reported them wrote them.
    kept = {name: seconds for name, seconds in earlier.items() if isinstance(seconds, dict)}
    timing: JSONObject = {**kept, **this_call, "calls": [*earlier_calls(earlier), this_call]}
    judged: list[Claim] = []
    # The summaries, and results.csv's rows of runs that are gone: the references' check.
    recorded = recorded_summaries(out, configs, summaries)
    for experiment in experiments:
        timing[experiment.name] = experiment_seconds(runs_trained(experiment, how), summaries)
        judged += _judge(
            experiment, how, configs, (summaries, recorded), setting, train, timing, earlier
        )
    if train:
        write_json(out / "timing.json", timing)
    return record_claims(out, judged, setting, how.seed_range, dependence(out, setting))


def _judge(
    experiment: Experiment,
    how: Reproduction,
    configs: Mapping[Run, RunConfig],
    recorded: tuple[Mapping[Run, dict[str, Any]], Mapping[Run, dict[str, Any]]],
    setting: Setting,
    train: bool,
    timing: JSONObject,
    earlier: Mapping[str, Any],
) -> list[Claim]:
    """One experiment's report and claims, written into OUT/EXPERIMENT: from its runs when
    all are finished, else judged again from its results.json (``train=False``), else a note
    of how many runs are missing and no claims. ``recorded``: the finished runs' summaries,
    and those with results.csv's rows of runs that are gone (``recorded_summaries``), which
    the references' check reads. ``timing[experiment.name]`` gains the report's seconds, or
    the earlier call's seconds where the report is judged again."""
    summaries, with_rows = recorded
    scale, seed_range, folder = how.scale, how.seed_range, Path(how.out) / experiment.name
    planned = experiment.plan(scale, seed_range)
    make_dir(folder)
    built = [configs[run] for run in planned]
    built += experiment.measures(scale, seed_range, how.overrides)
    construction = ", ".join(sorted({config.model.construction for config in built}))
    stops = stops_note(timing[experiment.name])
    changed = changed_settings_note(setting)
    header = report_header(experiment, scale, seed_range, construction, changed, stops)
    missing = sum(run not in summaries for run in runs_trained(experiment, how))
    rereads = (missing or not planned) and not train  # --no-train measures nothing either
    again = rejudged(experiment, folder, setting) if rereads else None
    if again is not None:
        claims, construction = again
        # The runs' seconds as the call that trained them measured them.
        timing[experiment.name] = earlier.get(experiment.name, timing[experiment.name])
    elif missing or rereads:
        write_text(folder / "report.md", header + not_reported(missing, len(planned)))
        return []
    else:
        started = time.perf_counter()
        with trained_as(tuning_caption(setting, experiment.tuned_presets)):
            report = experiment.report(scale, seed_range, summaries, folder, how.overrides)
        timing[experiment.name]["report_seconds"] = time.perf_counter() - started
        write_text(folder / "report.md", header + report.markdown + "\n")
        results = {**setting.record(), "construction": construction, **report.results}
        write_json(folder / "results.json", results)
        claims = report.claims
    unlearned = unlearned_references(experiment, scale, seed_range, with_rows)
    ids = [c.id for c in claims]
    capped = capped_runs(experiment, planned, how)
    unfinished = unfinished_by_task(experiment, scale, seed_range, with_rows, configs, ids, capped)
    headlines, measured = experiment.headlines(scale, seed_range), built[len(planned) :]
    for judged_claim in claims:
        tasks = {run.task for line in headlines.get(judged_claim.id, []) for run in line.runs}
        read = [configs[run] for run in planned if not tasks or run.task in tasks] + measured
        judged_claim.runs = sorted({run_dir_name(config) for config in read})
        judged_claim.construction = construction
        judged_claim.independent_of = list(experiment.independent_of)
        judged_claim.refuse(unlearned.get(judged_claim.id, {}))
        judged_claim.hold_back(unfinished.get(judged_claim.id, {}))
    return claims


def capped_runs(experiment: Experiment, planned: Sequence[Run], how: Reproduction) -> set[Run]:
    """The planned runs whose group's tuning (the scale's tuned presets, where they apply)
    reached the budget cap still rising, but for a family ``reproduce --extend`` trained past
    it (its own runs' rise then decides)."""
    if not presets_apply(how):
        return set()
    capped = capped_groups(how.scale)
    factors = read_extension(Path(how.out))["factors"]
    return {
        run
        for run in planned
        if identity(run, how.scale) in capped and family(experiment.name, run.task) not in factors
    }


def rejudged(
    experiment: Experiment, folder: Path, setting: Setting
) -> tuple[list[Claim], str] | None:
    """The experiment's claims judged under the current rules from the ``results.json`` an
    earlier call wrote under ``setting``, and the construction it names; None when there is
    none, it is unreadable, lacks what the rule reads or was written under another setting."""
    try:
        stored = json.loads((folder / "results.json").read_text())
        if not setting.same_as(stored):
            return None
        return experiment.judge(stored), str(stored.get("construction", ""))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def report_header(
    experiment: Experiment,
    scale: str,
    seeds: range,
    construction: str,
    changed: str,
    stops: str,
) -> str:
    """A report's title and the line of what it was measured under."""
    built = construction and (
        f"Models built with the `{construction}` construction (docs/constructions.md)."
    )
    line = " ".join(filter(None, [f"Scale `{scale}`, {seeds_text(seeds)}.", built, changed, stops]))
    return f"# {experiment.title}\n\n{line}\n\n"
