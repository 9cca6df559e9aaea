"""Where a reproduction's time went (issue #102 item 1), from its own records: by experiment
(each call's wall time against its runs' steps), by model and by stop reason (the steps each
reason left untrained), and, for runs whose summaries hold it, by phase (setup and
evaluation beside the steps). Reads OUT/timing.json, OUT/results.csv and, where OUT/runs is
there, each run's summary.json; writes a JSON file.

    python studies/time_breakdown.py runs/tiny-plateau-seed400 \\
        --out results/time-breakdown/tiny-plateau-seed400.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import read_json, write_json
from mixit.study.results import read_results_csv

PHASES = ("setup", "evaluation")


def by_experiment(timing: dict) -> list[dict]:
    """Each experiment's runs, steps and their seconds, beside the wall time of the calls that
    trained it (a call that trained several experiments is split by their steps' seconds)."""
    wall: dict[str, float] = defaultdict(float)
    for call in timing.get("calls", []):
        named = [name for name in call["experiments"] if name in timing]
        steps = sum(timing[name]["train_seconds"] for name in named)
        for name in named:
            share = timing[name]["train_seconds"] / steps if steps else 1 / len(named)
            wall[name] += share * call["train_wall_seconds"]
    return [
        {
            "experiment": name,
            "runs": timing[name]["runs"],
            "steps_run": timing[name]["steps_run"],
            "steps_budget": timing[name]["steps_budget"],
            "step_seconds": timing[name]["train_seconds"],
            "wall_seconds": wall[name],
            "report_seconds": timing[name].get("report_seconds", 0.0),
            "stopped": timing[name]["stopped"],
        }
        for name in wall
    ]


def by_key(rows: list[dict], key: str) -> dict[str, dict]:
    """results.csv's runs grouped by ``key`` (model, stopped): runs, steps run and budgeted,
    and their steps' seconds."""
    grouped: dict[str, dict] = defaultdict(
        lambda: {"runs": 0, "steps_run": 0, "steps_budget": 0, "step_seconds": 0.0}
    )
    for row in rows:
        group = grouped[row[key]]
        group["runs"] += 1
        group["steps_run"] += int(row["steps_run"])
        group["steps_budget"] += int(row["steps"])
        group["step_seconds"] += float(row["train_seconds"])
    return dict(grouped)


def by_phase(runs: Path) -> dict[str, float | int]:
    """The summed phase seconds of the runs under ``runs`` whose summaries record them."""
    totals: dict[str, float | int] = {"runs": 0, "steps": 0.0, **dict.fromkeys(PHASES, 0.0)}
    for path in sorted(runs.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        if "phase_seconds" not in summary:
            continue
        totals["runs"] += 1
        totals["steps"] += summary["train_seconds"]
        for phase in PHASES:
            totals[phase] += summary["phase_seconds"].get(phase, 0.0)
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="time_breakdown", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="a reproduction's output folder")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    folder = Path(args.output)
    if not (folder / "timing.json").is_file() or not (folder / "results.csv").is_file():
        raise UsageError(f"{folder}: no timing.json and results.csv of a reproduction there")
    timing = read_json(folder / "timing.json", "timing.json")
    rows = read_results_csv(folder / "results.csv")
    breakdown = {
        "output": folder.name,
        "jobs": timing.get("jobs", 1),
        "experiments": by_experiment(timing),
        "models": by_key(rows, "model"),
        "stopped": by_key(rows, "stopped"),
        "phases": by_phase(folder / "runs"),
    }
    write_json(Path(args.out), breakdown)
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("time_breakdown", main))
