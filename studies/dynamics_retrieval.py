"""When the standard model's and Frozen-QK's retrieval circuits form, and what the trained runs
rest on (docs/reviewers.md, "When and how does a circuit form?").

Reads a comparison trained with ``train.track_heads=true`` (the planned command in
docs/reviewers.md) and, for each of its runs, the head scores it tracked
(``mixit.analysis.dynamics``) and each component mean-ablated on 512 test rows
(``mixit.analysis.ablation``). Writes to OUT: ``dynamics.json`` (every run's series, crossing
steps and ablation), ``dynamics.png`` (a panel per run: its strongest previous-token and
induction heads against the step, beside the metric), ``compare.json`` and ``README.md``.

    python studies/dynamics_retrieval.py runs/dynamics-retrieval results/dynamics-retrieval
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from mixit.analysis.ablation import ablate
from mixit.analysis.dynamics import Dynamics, Series, read_dynamics
from mixit.cli import run_tool
from mixit.cli.parser import OneLineParser
from mixit.common.errors import UsageError
from mixit.common.io import write_json, write_text
from mixit.common.plots import metric_label, save, series_style, styled
from mixit.models.heads import HEAD_THRESHOLD
from mixit.training.rundir import load_run

ROWS = 512  # test rows each ablation is scored on


def _strongest(found: Dynamics, kind: str) -> Series:
    """The head of ``kind`` with the highest score at the last evaluation."""
    return max((s for s in found.series if s.kind == kind), key=lambda s: s.values[-1])


def read_run(run_dir: Path) -> dict[str, Any]:
    """One run's model, seed, tracked dynamics and ablation."""
    model, config = load_run(run_dir)
    found = read_dynamics(run_dir, config)
    ablation = ablate(model, config, ROWS)
    return {
        "model": config.variant,
        "seed": config.seed,
        "run": run_dir.name,
        "dynamics": dataclasses.asdict(found),
        "previous_token": dataclasses.asdict(_strongest(found, "previous_token")),
        "induction": dataclasses.asdict(_strongest(found, "induction")),
        "ablation": dataclasses.asdict(ablation),
    }


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """A panel per run (models down, seeds across): its strongest previous-token and induction
    heads against the step, the threshold, and the metric in grey on the right axis."""
    models = list(dict.fromkeys(r["model"] for r in runs))
    seeds = sorted({r["seed"] for r in runs})
    with styled() as plt:
        fig, axes = plt.subplots(len(models), len(seeds), figsize=(7.0, 2.3 * len(models)),
                                 sharex=True, sharey=True, squeeze=False)  # fmt: skip
        for run in runs:
            ax = axes[models.index(run["model"])][seeds.index(run["seed"])]
            steps = run["dynamics"]["steps"]
            for index, kind in enumerate(("previous_token", "induction")):
                head = run[kind]
                label = f"{kind.replace('_', '-')} ({head['head']})"
                ax.plot(
                    steps, head["values"], label=label, markersize=3, **series_style(kind, index)
                )
            ax.axhline(HEAD_THRESHOLD, color="#999999", linewidth=0.8, linestyle=":")
            metric = ax.twinx()
            metric.plot(steps, run["dynamics"]["values"], color="#999999", linewidth=2.4, alpha=0.5)
            metric.set_ylim(0, 1.02)
            metric.tick_params(labelsize=6)
            ax.set_title(f"{run['model']}, seed {run['seed']}", fontsize=7)
            ax.set_ylim(-0.02, 1.02)
            ax.legend(fontsize=5, loc="upper left", frameon=False)
        for ax in axes[-1]:
            ax.set_xlabel("step")
        for row in axes:
            row[0].set_ylabel("head score")
        metric_name = metric_label(runs[0]["dynamics"]["metric"])
        fig.suptitle(f"retrieval at tiny: strongest heads as they formed ({metric_name} grey)")
        save(fig, path)


def _step(value: int | None) -> str:
    return "never" if value is None else f"{value:,}"


def readme(runs: list[dict[str, Any]], command: str) -> str:
    """The output's README: the command, and a row per run."""
    lines = [
        "# Circuit dynamics on retrieval (tiny): standard and Frozen-QK",
        "",
        "Made by `python studies/dynamics_retrieval.py` from the runs of:",
        "",
        f"    {command}",
        "",
        f"Each run's strongest previous-token and induction head (by its last score), the first "
        f"step each reached {HEAD_THRESHOLD:g}, the metric's halfway point, "
        f"and the component whose mean ablation on {ROWS} test rows costs the most (its drop "
        "in test accuracy). `dynamics.json` has every head and every ablation; `dynamics.png` "
        "draws the two heads of each run.",
        "",
        "| model | seed | previous-token head, crossed | induction head, crossed | metric halfway "
        "| largest ablation drop |",
        "|---|---:|---|---|---:|---|",
    ]
    for r in runs:
        prev, ind, top = r["previous_token"], r["induction"], r["ablation"]["components"][0]
        lines.append(
            f"| {r['model']} | {r['seed']} | {prev['head']} at {_step(prev['crossed_at'])} "
            f"| {ind['head']} at {_step(ind['crossed_at'])} "
            f"| {_step(r['dynamics']['learned_at'])} | {top['component']} {top['drop']:+.3f} |"
        )
    lines += ["", "## What the runs show, counted", ""]
    for model in dict.fromkeys(r["model"] for r in runs):
        mine = [r for r in runs if r["model"] == model]
        lines.append(f"- {model}: " + "; ".join(_counts(mine)) + ".")
    lines += [
        "",
        "The metric's halfway point is the first evaluation at which the test accuracy reaches "
        "halfway from its first value to its best: when the task was learned, read so that a "
        "first rise from below chance to chance is not taken for it.",
    ]
    return "\n".join(lines) + "\n"


def _counts(runs: list[dict[str, Any]]) -> list[str]:
    """What a model's runs share: how many crossed with each kind of head, and what kind of
    component their largest ablation drop is."""
    said = []
    for kind in ("previous_token", "induction"):
        steps = [r[kind]["crossed_at"] for r in runs if r[kind]["crossed_at"] is not None]
        at = f" (steps {', '.join(f'{s:,}' for s in steps)})" if steps else ""
        article = "an" if kind == "induction" else "a"
        said.append(
            f"{article} {kind.replace('_', '-')} head crossed in {len(steps)} of {len(runs)}{at}"
        )
    mlp = sum(r["ablation"]["components"][0]["component"].endswith("MLP") for r in runs)
    said.append(f"the largest ablation drop is an MLP in {mlp} of {len(runs)}, a head in the rest")
    return said


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="dynamics_retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="the comparison's folder (its compare.json and runs/)")
    parser.add_argument("out", help="the output folder to write")
    args = parser.parse_args(argv)
    source = Path(args.runs)
    if not (source / "compare.json").is_file() or not (source / "runs").is_dir():
        raise UsageError(f"{source} holds no comparison (compare.json and runs/)")
    result = json.loads((source / "compare.json").read_text())
    runs = [read_run(run) for run in sorted((source / "runs").iterdir()) if run.is_dir()]
    runs.sort(key=lambda r: (r["model"] != "standard", r["seed"]))
    out = Path(args.out)
    write_json(out / "dynamics.json", {"runs": runs})
    write_json(out / "compare.json", result)
    plot(runs, out / "dynamics.png")
    overrides = " ".join(f"{k}={v}" for k, v in result.get("overrides", {}).items())
    models = ",".join(row["model"] for row in result["rows"])
    command = (
        f"mixit compare --task {result['task']} --models {models} --seeds "
        f"{len(result['seeds'])} {overrides} --out {source}"
    )
    write_text(out / "README.md", readme(runs, command))
    print(f"written: {out}/dynamics.json, dynamics.png, compare.json, README.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_tool("dynamics_retrieval", main))
