"""``mixit suite --axis``: every task of a suite along its own difficulty axis.

Each task walks its axis as ``compare --axis`` does (``along_axis``: one comparison per value
in ``OUT/TASK/KEY=VALUE/``, the reading in ``OUT/TASK/axis.json``), so that one command says,
task by task, where each model stops matching the reference. The suite then writes
``OUT/axis.csv`` (every run, with its task), ``OUT/heatmap.png`` (each model's score over each
task's axis, 0: chance, 1: the reference, marked with where it breaks), ``OUT/summary.md``
(each task's reading as ``compare --axis`` prints it) and ``OUT/suite.json``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import make_dir, read_record, staged_from_stored, write_json, write_text
from mixit.config.overrides import Setting, Settings
from mixit.running.launchers import Launch
from mixit.study.axis import (
    BREAKS,
    HOLDS,
    INCONCLUSIVE,
    Axis,
    along_axis,
    axis_csv,
    format_axis,
    parse_axis,
)
from mixit.study.compare import run_study
from mixit.study.comparison import AxisResult, ComparisonResult
from mixit.study.plan import Study
from mixit.study.suite import check_reference, heatmap, suite_tasks
from mixit.tasks import get_task

# The heatmap's marks under ``--axis``: where a model stops matching over the axis.
AXIS_MARKS = {HOLDS: True, BREAKS: False, INCONCLUSIVE: None}
AXIS_LEGEND = (
    "✓ holds over the axis, ✗ breaks on it, ? inconclusive (litmus test at each value); "
    "no ref.: the reference learned at no value"
)


def suite_along(
    axis: str,
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
) -> dict[str, AxisResult]:
    """``mixit.suite``'s comparisons, each task along its axis from one ``axis``
    (``default``, ``auto`` or ``KEY=v1,...``; every task's checked before anything trains);
    returns ``{task: axis.json}``."""
    check_reference(models)
    overrides = dict(overrides or {})
    walked, without_knob = axis_tasks(axis, tasks)
    axes = {task: parse_axis(axis, task, preset, overrides) for task in walked}
    study = Study.of(
        walked,
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

    def compare_task(task: str, folder: Path, point: dict[str, Setting]) -> ComparisonResult:
        return run_study(study.on(task, folder, point))

    return suite_along_axes(axes, study.out, overrides, compare_task, report_only, without_knob)


def axis_tasks(axis: str, tasks: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The suite's tasks (``suite_tasks``) that walk ``axis``, and those left out: under
    ``default`` or ``auto`` the default suite leaves out the tasks with no knob of their own
    (``TaskSpec.axis``); tasks the user names are all walked, and one without a knob fails."""
    chosen = suite_tasks(tasks)
    if tasks is not None or axis not in ("default", "auto"):
        return chosen, []
    knobless = [task for task in chosen if get_task(task).axis is None]
    return [task for task in chosen if task not in knobless], knobless


# What a stored file that --report cannot read asks for.
RUN_AGAIN = "run the suite again without --report"


def suite_along_axes(
    axes: Mapping[str, Axis],
    out: Path,
    overrides: Settings,
    compare_task: Callable[[str, Path, dict[str, Any]], ComparisonResult],
    report_only: bool = False,
    without_knob: Sequence[str] = (),
) -> dict[str, AxisResult]:
    """``{task: axis.json}``: each task along its axis (``compare_task(task, folder,
    overrides)`` returns one value's compare.json), or with ``report_only`` the tasks whose
    axis.json exists; then the suite's files, which name the tasks left out for having no
    knob (``without_knob``)."""
    out = make_dir(out)
    if report_only:
        results = {
            task: read_record(
                out / task / "axis.json", AxisResult, f"{task}'s axis.json", RUN_AGAIN
            )
            for task in axes
            if (out / task / "axis.json").is_file()
        }
        if not results:
            raise UsageError(f"no task in {out} has finished its axis: run without --report")
    else:
        results = {
            task: along_axis(
                axis, out / task, overrides, lambda f, o, t=task: compare_task(t, f, o)
            )
            for task, axis in axes.items()
        }
    unfinished = [task for task in axes if task not in results]
    if not report_only:
        write_axes(out, results, unfinished, [*axes], without_knob)
        return results
    with staged_from_stored(out, "an axis.json", RUN_AGAIN) as stage:
        write_axes(stage, results, unfinished, [*axes], without_knob)
    return results


def write_axes(
    out: Path,
    results: Mapping[str, AxisResult],
    unfinished: Sequence[str],
    tasks: Sequence[str],
    without_knob: Sequence[str],
) -> None:
    """The suite's files from each task's axis.json: axis.csv, the heatmap, summary.md and
    suite.json."""
    write_text(out / "axis.csv", tasks_csv(results))
    scores = {t: {s["model"]: s["relative"] for s in r["scores"]} for t, r in results.items()}
    heatmap(out / "heatmap.png", scores, _as_comparisons(results), AXIS_LEGEND)
    write_text(out / "summary.md", axes_markdown(results, unfinished, without_knob))
    summary = {
        task: {k: result[k] for k in ("key", "values", "stopped_at", "break_points", "scores")}
        for task, result in results.items()
    }
    record = {"tasks": list(tasks), "axes": summary, "unfinished": list(unfinished)}
    write_json(out / "suite.json", record | {"without_knob": list(without_knob)})


def tasks_csv(results: Mapping[str, Mapping[str, Any]]) -> str:
    """Every task's axis.csv, one table with a ``task`` column first."""
    buffer = io.StringIO()
    writer = None
    for task, result in results.items():
        for row in csv.DictReader(io.StringIO(axis_csv(result))):
            if writer is None:
                fields = ["task", *row]
                writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
                writer.writeheader()
            writer.writerow({"task": task, **row})
    return buffer.getvalue()


def _as_comparisons(results: Mapping[str, AxisResult]) -> dict[str, ComparisonResult]:
    """What the heatmap reads of a comparison (its first value's setting and seeds), with
    each model's mark from its break point instead of one litmus verdict."""
    shaped = {}
    for task, result in results.items():
        first = dict(result["points"][0]["compare"])
        rows = [
            {"model": b["model"], "matches": AXIS_MARKS[b["outcome"]]}
            for b in result["break_points"]
            if b["outcome"] in AXIS_MARKS
        ]
        shaped[task] = {**first, "litmus": {"rows": rows}}
    return shaped


def axes_markdown(
    results: Mapping[str, Mapping[str, Any]],
    unfinished: Sequence[str],
    without_knob: Sequence[str] = (),
) -> str:
    """Each task's reading as ``compare --axis`` prints it, and its figure."""
    lines = [
        "# Suite along each task's axis",
        "Scores over each axis: 0 is the task's chance level, 1 the reference (heatmap.png, "
        "marked with where each model breaks; every run in axis.csv).",
    ]
    for task, result in results.items():
        lines += [f"## {task}", f"```\n{format_axis(result)}\n```", f"![{task}]({task}/axis.png)"]
    if unfinished:
        lines.append(f"Not finished (no axis.json yet): {', '.join(unfinished)}.")
    if without_knob:
        lines.append(
            f"Left out, no knob of their own: {', '.join(without_knob)} (name one with --tasks "
            "and --axis KEY=v1,v2,...)."
        )
    return "\n\n".join(lines) + "\n"
