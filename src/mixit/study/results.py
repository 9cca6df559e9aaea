"""``results.csv``: one flat row per run, written by ``compare``, ``reproduce`` and ``suite``
alike, for a spreadsheet or pandas instead of each command's own JSON."""

from __future__ import annotations

import csv
import io
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.io import write_text
from mixit.tasks import get_task
from mixit.training.rundir import RunSummary

COLUMNS = (
    "task",
    "model",
    "seed",
    "metric",
    "value",
    "chance",
    "steps",
    "steps_run",
    "stopped",
    "train_seconds",
    "params_trainable",
    "run_dir",
    "lr",  # added with the tuning protocol, last so that earlier columns keep their places
    # The task's peers score it another way (MAD's class-averaged accuracy), beside `value`;
    # blank where the headline metric is the peer's own.
    "peer_metric",
    "peer_value",
    # Which split `value` was scored on: `test`, or `validation` where the run held rows out
    # of its training data (train.validation_fraction), which the metric's name does not say.
    "evaluated_on",
)
PEER_METRIC = "test_macro_accuracy"


class ResultRow(TypedDict):
    """One run's row of ``results.csv`` as written (``COLUMNS``; blank: "")."""

    task: str
    model: str
    seed: int
    metric: str
    value: float
    chance: float | str | None
    steps: int
    steps_run: int
    stopped: str
    train_seconds: float
    params_trainable: int
    run_dir: str
    lr: float | str
    peer_metric: str
    peer_value: float | str
    evaluated_on: str


def result_row(summary: RunSummary) -> ResultRow:
    """A run's row from its summary (with ``run_dir``, as the runs layer returns it): the
    task's headline metric, its peers' metric where theirs differs, and the run's cost."""
    spec = get_task(summary["task"])
    metric = spec.metric
    peer = PEER_METRIC if spec.reports_macro_accuracy else ""
    return {
        "task": summary["task"],
        "model": summary["model"],
        "seed": summary["seed"],
        "metric": metric,
        "value": summary["metrics"][metric],
        "chance": summary.get("chance", ""),
        "steps": summary["steps"],
        "steps_run": summary.get("steps_run", summary["steps"]),
        "stopped": summary.get("stopped", "budget"),
        "train_seconds": summary["train_seconds"],
        "params_trainable": summary["params_trainable"],
        "run_dir": summary.get("run_dir", ""),
        "lr": summary.get("lr", ""),
        "peer_metric": peer,
        "peer_value": summary["metrics"].get(peer, "") if peer else "",
        "evaluated_on": summary.get("evaluated_on", "test"),
    }


def write_results_csv(
    path: Path, summaries: Iterable[RunSummary], keep_earlier: bool = False
) -> None:
    """One row per distinct run (a run shared by two keys once), sorted by task, model and
    seed; written whole, under a temporary name first. ``keep_earlier`` keeps the rows an
    earlier call wrote for runs not among ``summaries`` (another experiment's, or runs since
    removed whose results an output still reports)."""
    # A run is known by its directory's name (its config's hash): the same run read from
    # another folder (records copied under results/) replaces its earlier row.
    rows: dict[Any, Mapping[str, Any]] = {}
    if keep_earlier and path.is_file():
        try:
            earlier = read_results_csv(path)
            rows = {Path(row["run_dir"]).name: row for row in earlier if row.get("run_dir")}
        except (OSError, ValueError, KeyError, csv.Error):  # damaged: written anew
            rows = {}
    for summary in summaries:
        rows[Path(summary.get("run_dir") or "").name or id(summary)] = result_row(summary)
    write_rows(path, rows.values())


def write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """``results.csv`` rows (``COLUMNS``), sorted by task, model and seed."""
    ordered = sorted(rows, key=lambda r: (r["task"], r["model"], int(r["seed"])))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(ordered)
    write_text(path, text.getvalue())


# What a run's row is found by: a results.csv of an earlier version, without the later
# columns, still keeps its rows when an output is judged again.
KEYS = ("task", "model", "seed", "run_dir")


def csv_problem(path: Path, columns: Collection[str] = COLUMNS) -> str:
    """Why ``path`` is not a results.csv with ``columns`` and whole seeds ("" when it is, or
    when there is none), for a command to refuse before it writes over one."""
    try:
        with path.open(newline="") as file:
            reader = csv.DictReader(file)
            rows, header = list(reader), set(reader.fieldnames or [])
    except FileNotFoundError:
        return ""
    except (OSError, ValueError, csv.Error) as error:  # not text, or not CSV
        return f"{path} is damaged ({error})"
    # A row cut short (a truncated file) lacks its last fields: None, as one too long has.
    whole = all(None not in row and None not in row.values() for row in rows)
    if not set(columns) <= header or not whole:
        return f"{path}: not a results.csv this version reads (its columns, or rows cut short)"
    if not all(str(row["seed"]).isdigit() for row in rows):
        return f"{path}: not a results.csv this version reads (a seed that is not a number)"
    return ""


def read_results_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))
