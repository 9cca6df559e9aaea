"""What the standard model's accuracy rests on where the fixed-mixing rows fall short: each
component of the reference's run on every verdict seed mean-ablated in turn
(``mixit.analysis.ablation``), for each comparison named (docs/reviewers.md, "Which component
does a verdict rest on?").

Reads each comparison's ``compare.json`` and ``results.csv`` and the standard runs' weights
under its ``runs/``; writes to OUT ``ablations.json`` (every component of every run) and
``README.md`` (per task and seed, the three largest drops, with their head scores).

    python studies/verdict_ablations.py runs/rows-retrieval runs/rows-mqar \
        --out results/verdict-ablations
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from mixit.analysis.ablation import ablate
from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json, write_text
from mixit.common.plots import metric_label
from mixit.study.results import read_results_csv
from mixit.training.rundir import load_run

ROWS = 512  # test rows each ablation is scored on
SHOWN = 3  # components per run in the README
REFERENCE = "standard"


def ablations_of(folder: Path) -> dict[str, Any]:
    """One comparison: its task, the variants that fell short, and each reference run's
    ablation."""
    if not (folder / "compare.json").is_file() or not (folder / "results.csv").is_file():
        raise UsageError(f"{folder} holds no comparison (compare.json and results.csv)")
    result = json.loads((folder / "compare.json").read_text())
    short = [r["model"] for r in result["litmus"].get("rows", []) if r["matches"] is False]
    runs = []
    for row in read_results_csv(folder / "results.csv"):
        if row["model"] != REFERENCE:
            continue
        model, config = load_run(Path(row["run_dir"]))
        found = ablate(model, config, ROWS)
        runs.append(
            {"seed": config.seed, "run": Path(row["run_dir"]).name, **dataclasses.asdict(found)}
        )
    return {"task": result["task"], "short": short, "runs": sorted(runs, key=lambda r: r["seed"])}


def readme(found: list[dict[str, Any]], argv: list[str]) -> str:
    """The output's README: the command, and per task and seed the largest drops."""
    lines = [
        "# What the standard model rests on where fixed mixing falls short (tiny, tuned)",
        "",
        "Made by:",
        "",
        f"    python studies/verdict_ablations.py {' '.join(argv)}",
        "",
        f"Each component of the standard model's run on every verdict seed is mean-ablated in "
        f"turn on {ROWS} test rows (a head: its gathered values before W_O; an MLP: its output; "
        "`mixit analyze ablate`). Below, the three whose ablation costs the most, with each "
        "head's previous-token and induction score on the same rows; `ablations.json` has "
        "every component.",
        "",
    ]
    for task in found:
        runs = task["runs"]
        metric = metric_label(runs[0]["metric"]) if runs else ""
        lines += [f"## {task['task']} ({metric}; falls short: {', '.join(task['short'])})", ""]
        lines += ["| seed | unablated | largest drops |", "|---:|---:|---|"]
        for run in runs:
            drops = "; ".join(_component(c) for c in run["components"][:SHOWN])
            lines.append(f"| {run['seed']} | {run['unablated']:.3f} | {drops} |")
        lines.append("")
    return "\n".join(lines)


def _component(c: dict[str, Any]) -> str:
    scores = (
        f" (previous-token {c['previous_token']:.2f}, induction {c['induction']:.2f})"
        if c["previous_token"] is not None
        else ""
    )
    return f"{c['component']}{scores} -> {c['metric']:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="verdict_ablations", description=__doc__.split("\n\n")[0])
    parser.add_argument("comparisons", nargs="+", help="comparison folders (compare --out)")
    parser.add_argument("--out", required=True, help="the output folder to write")
    args = parser.parse_args(argv)
    found = [ablations_of(Path(folder)) for folder in args.comparisons]
    out = Path(args.out)
    write_json(out / "ablations.json", {"comparisons": found})
    write_text(out / "README.md", readme(found, [*args.comparisons, "--out", args.out]))
    print(f"written: {out}/ablations.json, README.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("verdict_ablations", main))
