"""Whether a claim's reference learned its task, and whether its runs were trained to the end.

A claim such as C5 reads MixiT against the standard model (``Headline.reference``). When the
standard model did not learn the task on one of the seeds, by the litmus test's rule
(``mixit.study.litmus.short_of_chance``), the comparison on that task means nothing, whichever
way it points: the claim gets no verdict (``Claim.refuse``), and claims.md says which seeds fell
short. The check reads the runs' summaries, or the row ``OUT/results.csv`` keeps of each, so
an output whose runs are gone is checked too.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Collection, Mapping
from pathlib import Path

from mixit.config.schema import RunConfig
from mixit.running.runs import run_dir_name
from mixit.study.experiment import Experiment, Headline, Run, Summaries
from mixit.study.litmus import DEFAULT_TOLERANCE, NO_CEILING, short_of_chance
from mixit.study.results import read_results_csv
from mixit.tasks import get_task
from mixit.training.rundir import RunSummary
from mixit.tuning.rules import Scoring, at_top, rising_at_end


def per_seed(summaries: Summaries, selected: Collection[Run], metric: str) -> dict[int, float]:
    """``metric`` per seed over the ``selected`` runs that have a summary, in seed order."""
    values = {
        run.seed: float(s["metrics"][metric])
        for run, s in summaries.items()
        if run in selected and metric in s["metrics"]
    }
    return dict(sorted(values.items()))


def unlearned_reference(summaries: Summaries, headline: Headline) -> str:
    """Why the headline's standard runs cannot be its reference: the seeds that did not learn
    the task, by the litmus test's rule (``mixit.study.litmus.short_of_chance``); "" when they
    all did, or when the headline has no reference or its runs no chance level."""
    if not headline.reference:
        return ""
    values = per_seed(summaries, headline.reference, headline.metric)
    chances = [
        s["chance"]
        for run, s in summaries.items()
        if run in headline.reference and s.get("chance") is not None
    ]
    if not values or not chances:
        return ""
    tolerance = DEFAULT_TOLERANCE[headline.metric]
    short = short_of_chance(values, statistics.fmean(chances), tolerance)
    return f"standard on {headline.label} {short}" if short else ""


def unlearned_references(
    experiment: Experiment, scale: str, seeds: range, summaries: Summaries
) -> dict[str, dict[str, str]]:
    """Per claim of ``experiment``, why its reference runs did not learn their tasks, by the
    label of each headline that fell short; claims whose references all learned are left
    out."""
    found = {
        claim: {
            headline.label: why
            for headline in headlines
            if (why := unlearned_reference(summaries, headline))
        }
        for claim, headlines in experiment.headlines(scale, seeds).items()
    }
    return {claim: lines for claim, lines in found.items() if lines}


def recorded_summaries(
    out: Path, configs: Mapping[Run, RunConfig], summaries: Summaries
) -> dict[Run, RunSummary]:
    """``summaries``, and for each planned run without one the row ``OUT/results.csv`` keeps
    of it (its headline metric and chance), found by its run directory's name, which hashes
    its resolved config."""
    try:
        rows = {Path(row["run_dir"]).name: row for row in read_results_csv(out / "results.csv")}
    except (OSError, KeyError, csv.Error):
        rows = {}
    recorded: dict[Run, RunSummary] = {}
    for run, config in configs.items():
        row = rows.get(run_dir_name(config))
        if run in summaries:
            recorded[run] = dict(summaries[run])
        elif row is not None and row.get("value"):
            chance = float(row["chance"]) if row.get("chance") else None
            recorded[run] = {"metrics": {row["metric"]: float(row["value"])}, "chance": chance}
    return recorded


def unfinished_by_task(
    experiment: Experiment,
    scale: str,
    seeds: range,
    summaries: Summaries,
    configs: Mapping[Run, RunConfig],
    claim_ids: Collection[str],
    capped: Collection[Run] = (),
) -> dict[str, dict[str, list[str]]]:
    """``{claim: {task: lines}}``: per claim of ``claim_ids`` (``experiment``'s) and task, the
    runs it reads that were cut off while still rising, one line per model: a verdict run
    still rising at its budget's end (``tuning_rules.rising_at_end``), or a run whose tuning
    reached the budget cap still rising (``capped``). A claim reads every run its experiment
    plans on the tasks its headlines name (every task, without headlines). A metric with no
    ceiling (log perplexity) is read at its budget, never unfinished; a run whose folder is
    gone is judged by ``capped`` and the final value results.csv keeps of it (``summaries``
    as ``recorded_summaries`` gives them)."""
    planned = experiment.plan(scale, seeds)
    seeds_cut = cut_off_runs(planned, summaries, configs, capped)
    found: dict[str, dict[str, list[str]]] = {}
    read_by_claim = tasks_read(experiment, scale, seeds)
    for claim in claim_ids:
        reads = read_by_claim.get(claim) or {run.task for run in planned}
        for task, model in sorted(seeds_cut):
            if task in reads:
                why = "; ".join(
                    f"{cause} (seeds {_listed(cut)})"
                    for cause, cut in seeds_cut[task, model].items()
                )
                found.setdefault(claim, {}).setdefault(task, []).append(f"{model} on {task}: {why}")
    return found


def tasks_read(experiment: Experiment, scale: str, seeds: range) -> dict[str, set[str]]:
    """Per claim of ``experiment``, the tasks its headlines name (their runs and references)."""
    return {
        claim: {run.task for h in headlines for run in (*h.runs, *h.reference)}
        for claim, headlines in experiment.headlines(scale, seeds).items()
    }


def cut_off_runs(
    planned: Collection[Run],
    summaries: Summaries,
    configs: Mapping[Run, RunConfig],
    capped: Collection[Run] = (),
) -> dict[tuple[str, str], dict[str, set[int]]]:
    """``{(task, model): {why: seeds}}``: the ``planned`` runs cut off while still rising,
    as ``unfinished_by_task`` reads them."""
    seeds_cut: dict[tuple[str, str], dict[str, set[int]]] = {}
    for run in planned:
        if get_task(run.task).metric in NO_CEILING:
            continue
        summary = summaries.get(run, {})
        folder = summary.get("run_dir")
        stopped = summary.get("stopped", "budget")
        if run in capped and not ended_at_top(summary, configs.get(run)):
            why = "its tuning reached the budget cap still rising"
        elif (
            folder
            and (Path(folder) / "metrics.jsonl").is_file()
            and rising_at_end(Path(folder), configs[run], stopped)
        ):
            why = "still rising at its budget's end"
        else:
            continue
        seeds_cut.setdefault((run.task, run.model), {}).setdefault(why, set()).add(run.seed)
    return seeds_cut


def ended_at_top(summary: RunSummary, config: RunConfig | None) -> bool:
    """Whether a verdict run ended within the tolerance of its metric's ceiling or its target
    (``tuning_rules.at_top``): then its tuning group's reaching the budget cap still rising
    leaves this run's reading decided (#101: a perfect score is not still rising)."""
    if config is None:
        return False
    line = Scoring.of(config)
    final = summary.get("metrics", {}).get(line.metric)
    return final is not None and at_top(final, config.train.stop_at, line)


def _listed(seeds: Collection[int]) -> str:
    return ", ".join(str(seed) for seed in sorted(seeds))
