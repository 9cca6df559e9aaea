"""How close `--estimate` comes to what committed runs took (issue #102 item 7): each run of a
reproduction's records.tar.gz priced by the estimator's own timing of its config
(``pending_timings`` at the reproduction's --jobs), its seconds a step times the steps the run
trained, against the run's own train_seconds (which stops its clock while it evaluates). The
rule that judges a factor from it is docs/cost.md's "Estimates against the committed records".
Run it on a quiet machine: it times each distinct config for a few steps.

    python studies/estimate_calibration.py results/tiny-rules-seed300 results/tiny-rules-seed0 \\
        --out results/estimate-calibration/tiny.json

With --suite-estimate, it reads instead each named `suite --estimate --tune lr` output beside
the committed tuned suite it priced (ESTIMATE.txt=SUITE_FOLDER): per task, the tuning's range
(from the grid alone, up to the worst case) against the summed train_seconds of the suite's
runs at the tuning seed; nothing is timed.

    python studies/estimate_calibration.py --suite-estimate llama.txt=results/suite-llama-tuned \\
        gpt2.txt=results/suite-gpt2-tuned --out results/estimate-calibration/tuning.json
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import read_json, write_json
from mixit.config.schema import RunConfig
from mixit.running.archive import archived_files
from mixit.running.runs import pending_timings, run_dir_name
from mixit.training.resolve import stored_config
from mixit.tuning.rules import TUNING_SEED


class Record(NamedTuple):
    """One finished run of a reproduction: its config, the steps it trained and their
    seconds (train_seconds, which stops its clock while the run evaluates)."""

    config: RunConfig
    steps_run: int
    train_seconds: float


def run_files(output: Path) -> dict[str, bytes]:
    """The runs' files of ``output`` by path under it: its records.tar.gz, or, for an output
    that was not packed, its runs/ folder's config.json and summary.json files."""
    files = dict(archived_files(output))
    if not files and (output / "runs").is_dir():
        kept = ("config.json", "summary.json")
        paths = (p for p in sorted((output / "runs").glob("*/*.json")) if p.name in kept)
        files = {str(path.relative_to(output)): path.read_bytes() for path in paths}
    if not files:
        raise UsageError(f"{output}: no records.tar.gz or runs/ folder with runs there")
    return files


def records(output: Path) -> dict[str, Record]:
    """The finished runs of ``output`` (``run_files``), by run folder name."""
    files = run_files(output)
    found = {}
    for name, data in files.items():
        path = Path(name)
        if path.name != "summary.json" or path.parent.parent.name != "runs":
            continue
        config_bytes = files.get(str(path.parent / "config.json"))
        if config_bytes is None:
            continue
        summary = json.loads(data)
        config = stored_config(json.loads(config_bytes))
        found[path.parent.name] = Record(config, summary["steps_run"], summary["train_seconds"])
    return found


def jobs_of(output: Path) -> int:
    """The --jobs the reproduction in ``output`` trained with (timing.json; 1 without one)."""
    path = output / "timing.json"
    return read_json(path, str(path)).get("jobs", 1) if path.is_file() else 1


def by_task(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Measured and predicted seconds, and their ratio, summed per task."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: {"measured": 0.0, "predicted": 0.0})
    for row in rows:
        totals[row["task"]]["measured"] += row["measured"]
        totals[row["task"]]["predicted"] += row["predicted"]
    return {
        task: {**sums, "ratio": sums["measured"] / sums["predicted"]}
        for task, sums in sorted(totals.items())
    }


def step_seconds(sets: dict[str, dict[str, Record]], jobs: int, progress: bool) -> dict:
    """The estimator's seconds a step for every run of ``sets`` trained at ``jobs``, by run
    folder name: one call of ``pending_timings`` over them all, so that a config shared by
    several sets (the same presets on other seeds) is timed once."""
    configs = {
        (output, name): record.config
        for output, runs in sets.items()
        for name, record in runs.items()
    }
    timings = pending_timings(configs, None, jobs, progress)
    return {key: timings[run_dir_name(config)]["step_seconds"] for key, config in configs.items()}


def compared(output: str, runs: dict[str, Record], jobs: int, per_step: dict) -> dict:
    """Each run's measured step seconds against the estimator's timing at the steps it ran."""
    rows = [
        {
            "run": name,
            "task": record.config.task_name,
            "steps_run": record.steps_run,
            "measured": record.train_seconds,
            "predicted": per_step[output, name] * record.steps_run,
        }
        for name, record in sorted(runs.items())
    ]
    measured = sum(row["measured"] for row in rows)
    predicted = sum(row["predicted"] for row in rows)
    ratios = sorted(row["measured"] / row["predicted"] for row in rows if row["predicted"])
    return {
        "jobs": jobs,
        "runs": len(rows),
        "measured_seconds": measured,
        "predicted_seconds": predicted,
        "ratio": measured / predicted,
        "median_run_ratio": ratios[len(ratios) // 2],
        "run_ratio_range": [ratios[0], ratios[-1]],
        "tasks": by_task(rows),
        "rows": rows,
    }


UNITS = {"s": 1, "min": 60, "h": 3600}
TUNING_LINE = re.compile(
    r"about ([\d.]+) (s|min|h) one run after another from the grid alone.*?"
    r"up to ([\d.]+) (s|min|h)"
)


def tuning_range(text: str) -> dict[str, dict[str, float]]:
    """Per task, the seconds a `suite --estimate --tune lr` output gives its tuning: from the
    grid alone (``least``) and at the worst (``most``)."""
    ranges = {}
    for block in text.split("task: ")[1:]:
        found = TUNING_LINE.search(block)
        if found is None:
            raise UsageError(f"task {block.split()[0]}: no tuning line in the estimate")
        least, unit, most, most_unit = found.groups()
        ranges[block.split()[0]] = {
            "least": float(least) * UNITS[unit],
            "most": float(most) * UNITS[most_unit],
        }
    return ranges


def tuning_spent(suite: Path) -> dict[str, float]:
    """Per task, the summed train_seconds of the suite's runs at the tuning seed."""
    spent: dict[str, float] = defaultdict(float)
    for name, data in archived_files(suite):
        path = Path(name)
        if path.name == "summary.json" and path.parent.parent.name == "runs":
            summary = json.loads(data)
            if summary["seed"] == TUNING_SEED:
                spent[path.parts[0]] += summary["train_seconds"]
    if not spent:
        raise UsageError(f"{suite}: no runs at the tuning seed {TUNING_SEED} in its records")
    return dict(spent)


def suite_tuning(pairs: list[str]) -> dict:
    """Each ESTIMATE.txt=SUITE pair's tuning range against its spend, task by task."""
    suites = {}
    for pair in pairs:
        estimate, _, suite = pair.partition("=")
        if not suite or not Path(estimate).is_file():
            raise UsageError(f"--suite-estimate {pair}: give ESTIMATE.txt=SUITE_FOLDER")
        ranges, spent = tuning_range(Path(estimate).read_text()), tuning_spent(Path(suite))
        suites[Path(suite).name] = {
            "estimate_lines": [
                line for line in Path(estimate).read_text().splitlines() if "tuning" in line
            ],
            "tasks": {
                task: {**ranges[task], "spent": spent.get(task, 0.0)} for task in sorted(ranges)
            },
        }
    return suites


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="estimate_calibration", description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="*", help="committed reproductions' output folders")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--without",
        metavar="EARLIER",
        help="leave out the runs that EARLIER (a committed output) holds: the runs trained since",
    )
    parser.add_argument(
        "--suite-estimate",
        nargs="+",
        metavar="ESTIMATE=SUITE",
        help="read suite estimates against their tuned suites' tuning instead of timing",
    )
    args = parser.parse_args(argv)
    if args.suite_estimate:
        write_json(Path(args.out), {"suites": suite_tuning(args.suite_estimate)})
        return 0
    if not args.outputs:
        raise UsageError("name committed reproductions' folders, or --suite-estimate pairs")
    found = {
        Path(output).name: (records(Path(output)), jobs_of(Path(output))) for output in args.outputs
    }
    if args.without:  # a held-out set: the runs an earlier set of the same output did not hold
        seen = set(records(Path(args.without)))
        found = {
            f"{name} without {Path(args.without).name}": (
                {run: record for run, record in runs.items() if run not in seen},
                jobs,
            )
            for name, (runs, jobs) in found.items()
        }
    empty = [name for name, (runs, _) in found.items() if not runs]
    if empty:
        raise UsageError(f"{empty[0]}: no finished runs to compare")
    results = {}
    for jobs in sorted({jobs for _, jobs in found.values()}):
        sets = {output: runs for output, (runs, at) in found.items() if at == jobs}
        count = sum(map(len, sets.values()))
        print(f"timing the configs of {count} runs at --jobs {jobs}", file=sys.stderr)
        per_step = step_seconds(sets, jobs, not args.no_progress)
        for output, runs in sets.items():
            results[output] = compared(output, runs, jobs, per_step)
    write_json(Path(args.out), {"sets": results})
    for output, found in results.items():
        print(
            f"{output}: {found['runs']} runs at --jobs {found['jobs']}, steps measured over "
            f"timed {found['ratio']:.3f} (median run {found['median_run_ratio']:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("estimate_calibration", main))
