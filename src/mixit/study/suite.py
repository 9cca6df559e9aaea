"""``mixit suite``: the spectrum over a set of tasks, and one picture of what each task needs.

Each task is a ``compare`` into ``OUT/TASK`` (its runs, its table and litmus reading); the
suite then writes ``OUT/results.csv`` (every run, one row each), ``OUT/heatmap.png`` (each
variant's score on each task, from chance at 0 to the standard model at 1) and
``OUT/summary.md`` (the same numbers, each task's litmus verdicts, the tuning's choices and
what the runs cost). ``report_only`` writes those files from the tasks already finished, so a
suite that takes hours can be read while it runs or after it was stopped; each task is judged
again there under today's reading rules from its kept runs (``judge.judged_again``), and its
compare.json written anew where the reading moved.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.errors import UsageError, did_you_mean
from mixit.common.io import make_dir, read_json, staged_from_stored, write_json, write_text
from mixit.common.plots import PAGE, SEQUENTIAL, fitted, save, styled
from mixit.config.overrides import Settings
from mixit.running.launchers import Launch
from mixit.study.beside import beside_rows, beside_section
from mixit.study.compare import run_study
from mixit.study.comparison import ComparisonResult
from mixit.study.finished import finished_tasks, judged_now
from mixit.study.litmus import AUTO, AUTO_SEEDS, verdict_words
from mixit.study.per_layer import REFERENCE
from mixit.study.plan import Study, comparison_of
from mixit.study.results import read_results_csv, write_rows
from mixit.study.table import raised_budget, row_details, seeds_auto_text
from mixit.study.text import markdown_table
from mixit.tasks import TASKS
from mixit.training.rundir import read_records

# Every task that needs no corpus or user file (TaskSpec.synthetic): the suite's default.
SYNTHETIC = tuple(name for name, spec in TASKS.items() if spec.synthetic)


def relative_score(mean: float, standard: float, chance: float | None, lower_better: bool) -> float:
    """A variant's mean as the share of the standard model's gain over chance: 0 at chance, 1
    at the standard model (beyond 1: better than it). Without a chance level, mean / standard."""
    if chance is None or standard == chance:
        return mean / standard if standard else float("nan")
    sign = -1.0 if lower_better else 1.0
    return sign * (mean - chance) / (sign * (standard - chance))


def suite_tasks(tasks: Sequence[str] | None) -> list[str]:
    """The suite's tasks: ``tasks`` checked by name, or every synthetic one."""
    tasks = list(tasks or SYNTHETIC)
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        guess = did_you_mean(unknown[0], TASKS)
        raise UsageError(f"unknown task '{unknown[0]}'{guess}; choose from: {', '.join(TASKS)}")
    return tasks


def check_reference(models: Sequence[str] | None) -> None:
    """Refuse a suite without the reference (None: the default spectrum, which has it): every
    score, verdict and heatmap cell of a suite is read against it."""
    if models is not None and REFERENCE not in models:
        raise UsageError(
            f"--models {','.join(models)}: a suite reads every model against {REFERENCE}, so it "
            f"needs {REFERENCE} among them (compare trains models without it, with no reading)"
        )


def suite(
    tasks: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    *,
    preset: str = "tiny",
    seed: int = 0,
    seeds: int | str = 1,
    out: str | Path = "runs/suite",
    overrides: Settings | None = None,
    progress: bool | None = None,
    launch: Launch | None = None,
    tune: Sequence[str] | None = None,
    report_only: bool = False,
    extend: bool = False,
    max_hours: float | None = None,
    beside: str | Path | None = None,
) -> dict[str, ComparisonResult]:
    """Compare ``models`` on every task (default ``SYNTHETIC``) and write the suite's files;
    returns ``{task: compare.json}``. ``tune`` and ``seeds`` (a count, or ``"auto"``, decided
    task by task): as ``compare``'s (None: tune ``model.arch`` models only). ``report_only``:
    train nothing, and write the files from the tasks whose ``OUT/TASK/compare.json`` exists
    (the others are named as unfinished). ``beside``: an earlier suite's folder, whose
    verdicts summary.md and suite.json give beside this one's (``mixit.study.beside``).
    ``mixit.study.suite_axis.suite_along`` walks
    each task along its axis instead."""
    tasks = suite_tasks(tasks)
    check_reference(models)
    study = Study.of(
        tasks,
        models,
        out=out,
        overrides=overrides,
        tune=tune,
        launch=launch,
        preset=preset,
        seed=seed,
        seeds=seeds,
        progress=progress,
        extend=extend,
        max_hours=max_hours,
    )
    earlier = None
    if beside is not None:  # read before anything trains: a wrong folder stops the suite
        remedy = "give --beside a folder an earlier `mixit suite` wrote"
        earlier = (Path(beside), finished_tasks(Path(beside), tasks, remedy))
    if not report_only:  # every task's configs, so that bad input leaves no folder behind
        models_of, first = study.spectrum, range(seed, seed + 1)
        for task in tasks:
            comparison_of(study.on(task, study.out / task), models_of, first).configs()
    out = make_dir(study.out)
    if not report_only:
        results = {task: run_study(study.on(task, out / task)) for task in tasks}
        write_suite_files(out, tasks, results, preset, seeds, earlier)
        return results
    return reported(out, tasks, preset, seeds, earlier)


def reported(
    out: Path,
    tasks: Sequence[str],
    preset: str,
    seeds: int | str,
    earlier: tuple[Path, Mapping[str, Any]] | None,
) -> dict[str, ComparisonResult]:
    """``--report``: the finished tasks judged again and the suite's files written from them,
    all or none (``staged``): a compare.json this version cannot read is one UsageError."""
    finished = finished_tasks(out, tasks)
    with staged_from_stored(out, "a compare.json", "run the suite again without --report") as stage:
        results = judged_now(out, finished, stage)
        write_suite_files(out, tasks, results, preset, seeds, earlier, stage)
    return results


def write_suite_files(
    out: Path,
    tasks: Sequence[str],
    results: Mapping[str, Any],
    preset: str,
    seeds: int | str,
    earlier: tuple[Path, Mapping[str, Any]] | None = None,
    into: Path | None = None,
) -> None:
    """The suite's own files from its finished tasks' ``results``: results.csv, the heatmap,
    summary.md and suite.json, with ``earlier`` (an earlier suite's folder and its tasks'
    compare.json) set beside them; written into ``out``, or ``into`` (``staged``)."""
    unfinished = [task for task in tasks if task not in results]
    rows = [row for task in results for row in read_results_csv(out / task / "results.csv")]
    into = into or out
    write_rows(into / "results.csv", rows)
    scores = {task: relative_scores(result) for task, result in results.items()}
    heatmap(into / "heatmap.png", scores, results)
    costs = {task: logged_cost(out / task / "runs") for task in results}
    summary = summary_markdown(scores, results, preset, seeds, costs, unfinished)
    record: dict[str, Any] = {"tasks": list(tasks), "scores": scores, "unfinished": unfinished}
    if earlier is not None:
        folder, compared = earlier
        then = beside_rows(results, compared)
        summary += "\n" + "\n\n".join(beside_section(then, folder)) + "\n"
        record["beside"] = {"folder": str(folder), "rows": then}
    write_text(into / "summary.md", summary)
    write_json(into / "suite.json", record)


class LoggedCost(TypedDict):
    """What a task's runs cost as they logged it (``logged_cost``): the summary's Cost table."""

    runs: int
    train_seconds: float
    devices: set[str]


def logged_cost(runs: Path) -> LoggedCost:
    """How many runs ``runs`` holds, the training seconds their metrics.jsonl logged and the
    devices their summaries name: each run's last record, so a tuning trial halted at its
    rung counts what it trained. A run that has not logged yet (the suite still training)
    counts nothing. The devices say which seconds are comparable: a suite resumed on another
    machine mixes them."""
    logs = [read_records(path) for path in sorted(runs.glob("*/metrics.jsonl"))]
    seconds = [records[-1].get("train_seconds", 0.0) for records in logs if records]
    summaries = runs.glob("*/summary.json")
    devices = {read_json(path, "run summary").get("device", "unknown") for path in summaries}
    return LoggedCost(runs=len(seconds), train_seconds=float(sum(seconds)), devices=devices)


def relative_scores(result: Mapping[str, Any]) -> dict[str, float]:
    """Each model's ``relative_score`` on one task's comparison."""
    means = {row["model"]: row["mean"] for row in result["rows"]}
    if "standard" not in means:
        return {}
    if result.get("litmus", {}).get("no_reference"):  # the standard model did not learn it
        return dict.fromkeys(means, math.nan)
    lower = not result["higher_is_better"]
    return {
        model: relative_score(mean, means["standard"], result.get("chance"), lower)
        for model, mean in means.items()
    }


MARKS = {True: "✓", False: "✗", None: "?"}  # the litmus verdict: matches, falls short, unsure
LEGEND = (
    "✓ matches standard, ✗ falls short, ? inconclusive (litmus test); "
    "no ref.: no verdict, see summary.md"
)


def heatmap(
    path: Path,
    scores: Mapping[str, Mapping[str, float]],
    results: Mapping[str, Any],
    legend: str = LEGEND,
) -> None:
    """Variants (rows; the standard model, 1 by construction, left out) x tasks (columns),
    coloured from chance (0) to the standard model (1) on a colour-blind-safe scale that
    extends to every score, each cell with its score and its litmus verdict; PNG and PDF."""
    tasks = [task for task in scores if scores[task]]
    every = list(dict.fromkeys(m for t in tasks for m in scores[t]))
    models = [m for m in every if m != "standard"] or every  # a suite of standard alone
    grid = [[scores[t].get(m, math.nan) for t in tasks] for m in models]
    known = [v for row in grid for v in row if not math.isnan(v)]
    low, high = min([0.0, *known]), max([1.0, *known])
    verdicts = {
        t: {
            row["model"]: row.get("matches") for row in results[t].get("litmus", {}).get("rows", [])
        }
        for t in tasks
    }
    with styled() as plt:
        width = min(PAGE, 0.55 * len(tasks) + 1.9)
        fig, ax = plt.subplots(figsize=(width, 0.34 * len(models) + 1.5))
        colours = plt.get_cmap(SEQUENTIAL).with_extremes(bad="0.88")  # no score: light grey
        image = ax.imshow(grid, cmap=colours, vmin=low, vmax=high, aspect="auto")
        for i, model in enumerate(models):
            for j, task in enumerate(tasks):
                if model not in verdicts[task] and math.isnan(grid[i][j]):
                    text = "no ref." if model in scores[task] else ""
                else:
                    mark = MARKS.get(verdicts[task].get(model), "")
                    text = f"{grid[i][j]:.2f} {mark}".strip()
                dark = not math.isnan(grid[i][j]) and grid[i][j] < low + 0.55 * (high - low)
                ax.text(j, i, text, ha="center", va="center", size=6, color="w" if dark else "k")
        ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
        ax.set_yticks(range(len(models)), models)
        # Characters per inch of the title's and the legend's type: a narrow suite wraps both.
        title = fitted(_heatmap_title(results, tasks), max(20, int(14 * width)))
        ax.set(xlabel="task", ylabel="model", title=title)
        ax.grid(False)
        bar = fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
        bar.set_label("score (0: chance, 1: standard)")
        lines = textwrap.wrap(legend, int(26 * width))
        fig.text(0.01, 0.01, "\n".join(lines), size=5.5)
        fig.tight_layout(rect=(0, 0.04 * len(lines), 1, 1))
        save(fig, path)


def _heatmap_title(results: Mapping[str, Any], tasks: Sequence[str]) -> str:
    """What ran: the architecture, the preset, the seeds and whether it was tuned."""
    first = results[tasks[0]] if tasks else {}
    arch = first.get("overrides", {}).get("model.arch", "mixit's decoder")
    seeds = first.get("seeds", [])
    tuned = "tuned (docs/tuning.md)" if any(results[t].get("tuned") for t in tasks) else "untuned"
    return (
        f"Suite: {arch}, preset {first.get('preset', '?')}, "
        f"{len(seeds)} seed{'s' * (len(seeds) != 1)}, {tuned}"
    )


def summary_markdown(
    scores: Mapping[str, Mapping[str, float]],
    results: Mapping[str, Any],
    preset: str,
    seeds: int | str,
    costs: Mapping[str, LoggedCost],
    unfinished: Sequence[str] = (),
) -> str:
    """The scores as a table, each task's litmus verdicts (or why there are none), the tuning's
    choices where it ran, and each task's runs, training seconds and devices (``logged_cost``)."""
    models = list(dict.fromkeys(m for task in scores for m in scores[task]))
    rows = [[task, *(_cell(scores[task].get(m, math.nan)) for m in models)] for task in scores]
    lines = [
        f"# Suite: preset `{preset}`, {seeds_heading(seeds, results)}",
        "Score per task: 0 is the task's chance level, 1 the standard model "
        "(heatmap.png; every run in results.csv).",
        markdown_table(["task", *models], rows),
    ]
    if unfinished:
        lines.append(f"Not finished (no compare.json yet): {', '.join(unfinished)}.")
    lines.append("## Litmus verdicts")
    for task, result in results.items():
        reading = result.get("litmus", {})
        if reading.get("no_reference"):
            lines.append(f"- **{task}**: no verdict, " + "; ".join(reading["no_reference"]))
            continue
        verdicts = [f"{row['model']} {verdict_words(row)}" for row in reading.get("rows", [])]
        lines.append(f"- **{task}**: " + ", ".join(verdicts) + _auto_note(result))
        lines += _verdict_details(reading.get("rows", []))
    if seeds == 1:
        lines.append("\nOne seed per run: no verdict here is certain (use --seeds 3 or more).")
    spread = [v for task in scores for v in scores[task].values() if not math.isnan(v)]
    if spread:
        lines.append(f"\nScores range from {min(spread):.2f} to {max(spread):.2f}.")
    lines += _tuning_section(results, models) + _cost_section(costs)
    return "\n\n".join(lines) + "\n"


def _verdict_details(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Under a task's verdicts, what each one rests on: why it is inconclusive, and the
    ``row_details`` that ``compare`` prints."""
    details = []
    for row in rows:
        if row.get("why"):
            details.append(f"  - {row['model']} inconclusive: {row['why']}")
        details += [f"  - {row['model']}, {detail}" for detail in row_details(row)]
    return ["\n".join(details)] if details else []


def _auto_note(result: Mapping[str, Any]) -> str:
    return f" ({seeds_auto_text(result)})" if "seeds_auto" in result else ""


def seeds_heading(seeds: int | str, results: Mapping[str, Any]) -> str:
    """``3 seed(s)``, or under ``--seeds auto`` how many each task took: ``seeds auto (3 to 6):
    addition 3, khop 5``."""
    if seeds != AUTO:
        return f"{seeds} seed(s)"
    taken = ", ".join(f"{task} {len(result['seeds'])}" for task, result in results.items())
    return f"seeds auto ({AUTO_SEEDS[0]} to {AUTO_SEEDS[1]}): {taken}"


def _tuning_section(results: Mapping[str, Any], models: Sequence[str]) -> list[str]:
    """Each tuned task's choice per model: rate, steps, and whether it learned on validation."""
    tuned = {task: result["tuned"] for task, result in results.items() if result.get("tuned")}
    if not tuned:
        return []
    rows = []
    for task, choices in tuned.items():
        inits = {choice.get("init") for choice in choices.values()} - {None}
        cells = [_choice(choices[m]) if m in choices else "-" for m in models]
        rows.append([task, ", ".join(sorted(inits)) or "-", *cells])
    return [
        "## Tuning",
        "Chosen on the tuning seed's validation split (compare.json's `tuned` holds every "
        "rate tried): learning rate, steps and, where the models differ, each one's "
        "initialisation (raised: to the task's one budget, the largest any model reached, "
        "docs/tuning.md rule 5); *did not learn*: not clearly beyond chance at any rate "
        "(rule 7).",
        markdown_table(["task", "initialisation", *models], rows),
    ]


def _choice(choice: Mapping[str, Any]) -> str:
    text = f"{choice['train.lr']:.2g}, {choice['steps']:,}"
    text += " (raised)" if raised_budget(choice) else ""
    return text if choice.get("learned", True) else f"{text} *did not learn*"


def _cost_section(costs: Mapping[str, LoggedCost]) -> list[str]:
    """Each task's runs (tuning trials and verdict runs), their summed training seconds and
    the devices they trained on."""
    every = LoggedCost(
        runs=sum(cost["runs"] for cost in costs.values()),
        train_seconds=sum(cost["train_seconds"] for cost in costs.values()),
        devices=set().union(*(cost["devices"] for cost in costs.values())),
    )
    rows = [
        [task, cost["runs"], f"{cost['train_seconds']:,.0f}", ", ".join(sorted(cost["devices"]))]
        for task, cost in {**costs, "all": every}.items()
    ]
    return [
        "## Cost",
        "Training seconds logged by each run (tuning trials included), summed; runs that "
        "trained side by side overlap in wall time.",
        markdown_table(["task", "runs", "training seconds", "devices"], rows),
    ]


def _cell(score: float) -> str:
    return "no reference" if math.isnan(score) else f"{score:.2f}"
