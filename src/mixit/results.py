"""``results.csv``: one flat row per run, written by ``compare``, ``reproduce`` and ``suite``
alike, for a spreadsheet or pandas instead of each command's own JSON."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mixit.io import write_text
from mixit.tasks import get_task

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
)
PEER_METRIC = "test_macro_accuracy"


def result_row(summary: Mapping[str, Any]) -> dict[str, Any]:
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
    }


def write_results_csv(
    path: Path, summaries: Iterable[Mapping[str, Any]], keep_earlier: bool = False
) -> None:
    """One row per distinct run (a run shared by two keys once), sorted by task, model and
    seed; written whole, under a temporary name first. ``keep_earlier`` keeps the rows an
    earlier call wrote for runs not among ``summaries`` (another experiment's, or runs since
    removed whose results an output still reports)."""
    rows: dict[Any, Mapping[str, Any]] = {}
    if keep_earlier and path.is_file():
        try:
            rows = {row["run_dir"]: row for row in read_results_csv(path) if row.get("run_dir")}
        except (OSError, ValueError, KeyError, csv.Error):  # damaged: written anew
            rows = {}
    for summary in summaries:
        rows[summary.get("run_dir") or id(summary)] = result_row(summary)
    write_rows(path, rows.values())


def write_rows(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """``results.csv`` rows (``COLUMNS``), sorted by task, model and seed."""
    ordered = sorted(rows, key=lambda r: (r["task"], r["model"], int(r["seed"])))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(ordered)
    write_text(path, text.getvalue())


def read_results_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))
