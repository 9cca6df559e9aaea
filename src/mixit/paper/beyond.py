"""Rows past the paper's: Frozen-MLP beside the models of Tables 2 and 3, which the paper
leaves out and its reviewers asked for (issue #105).

Each report gives the row a column marked as beyond the paper, and reads it against the
standard model by the litmus test's rules, as ``mixit compare`` reads a variant
(``point_from_runs``): seed by seed on the same data, within the task's tolerance or beyond it,
open where a run was still rising at its budget's end, and no reading at all where the
standard model did not learn. No claim of the paper reads these rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mixit.common.io import JSONObject, read_json
from mixit.study.axis import point_from_runs
from mixit.study.comparison import LitmusResult
from mixit.study.experiment import Run, Summaries, runs
from mixit.study.litmus import VERDICTS
from mixit.study.tuned_presets import identity, rows_by_identity
from mixit.tuning.presets import tuned_rows

BEYOND = ("frozen-mlp",)
REFERENCE = "standard"


def column(model: str) -> str:
    """A table's header for ``model``: a row past the paper's says so."""
    return f"{model} (beyond the paper)" if model in BEYOND else model


def plan_beyond(
    task: str, seeds: range, scale: str, overrides: dict[str, str] | None = None
) -> list[Run]:
    """The runs of the rows past the paper's on ``task``, planned as the paper's rows are."""
    return runs(task, BEYOND, seeds, scale, overrides)


def trained_beyond(summaries: Summaries, planned: Sequence[Run]) -> tuple[str, ...]:
    """The rows past the paper's whose runs of ``planned`` all finished: a reproduction under
    a scale's tuned presets trains those the presets cover (``paper.runner``)."""
    models = [model for model in BEYOND if any(run.model == model for run in planned)]
    return tuple(m for m in models if all(run in summaries for run in planned if run.model == m))


def tuning_records(
    planned: Sequence[Run], summaries: Summaries, scale: str, out: Path
) -> dict[Run, JSONObject]:
    """Each run's tuning record, where it trained at the rate one chose: the scale's tuned
    presets, or this reproduction's own tuning (``OUT/tuning.json``, ``reproduce --tune
    lr``). A run trained at another rate (``--no-tune``) has none, and the reading then says
    it compared untuned models, as ``compare --no-tune`` does. Read once per report."""
    stored = out / "tuning.json"
    rows = [*tuned_rows(scale), *(read_json(stored, str(stored)) if stored.is_file() else [])]
    by_identity = rows_by_identity(rows, scale)
    found = {}
    for run in planned:
        row, summary = by_identity.get(identity(run, scale)), summaries[run]
        # At the chosen rate, over the chosen budget or one ``--extend`` doubled from it.
        chosen = row is not None and row["train.lr"] == summary.get("lr")
        if chosen and summary.get("steps", 0) >= row["steps"]:
            found[run] = dict(row)
    return found


def reading(
    task: str,
    summaries: Summaries,
    planned: Sequence[Run],
    seeds: range,
    tuned: Mapping[Run, JSONObject],
) -> LitmusResult:
    """The rows past the paper's on ``task`` read against the standard model, from
    ``planned``'s runs in ``summaries`` (compare.json's ``litmus``), each model's tuning
    (``tuned``, ``tuning_records``) weighed as ``compare`` weighs it."""
    models = (REFERENCE, *BEYOND)
    by_model = {m: [summaries[run] for run in planned if run.model == m] for m in models}
    records = {run.model: tuned[run] for run in planned if run in tuned and run.model in models}
    return point_from_runs(task, list(seeds), by_model, tuned=records)["litmus"]


def reading_lines(read: Mapping[str, LitmusResult]) -> list[str]:
    """The report's paragraph on the rows past the paper's: one line per task and row, its
    verdict, difference and reading, or why the standard model could not be the reference
    there; none where no row past the paper's trained (a report reads as it did before them)."""
    if not read:
        return []
    lines = []
    for task, litmus in read.items():
        for cause in litmus.get("no_reference", []):
            lines.append(f"- {task}: no reading, {cause}")
        for row in litmus["rows"]:
            # An open reading's words are its reasons (``why``); a verdict's say what it means.
            why = row.get("why", "")
            said = row["reading"] if why in row["reading"] else f"{row['reading']} ({why})"
            lines.append(
                f"- {task}, {row['model']} against standard: {VERDICTS[row['matches']]} "
                f"({row['difference']:+.3f}): {said}"
            )
    return [
        "Beyond the paper, each read by the litmus test as `compare` reads it:\n\n"
        + "\n".join(lines)
    ]


def with_beyond(results: JSONObject, read: Mapping[str, LitmusResult]) -> JSONObject:
    """``results`` with the rows past the paper's readings (``beyond``) where any trained."""
    return {**results, "beyond": dict(read)} if read else dict(results)
