"""Figures of docs/width.md: the width and width-depth questions."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from figures import common
from figures.common import _json
from mixit.paper.width import INIT_STD
from mixit.paper.width_reading import reading
from mixit.study.measures import mean_std
from mixit.study.results import read_results_csv


def _frozen_attention_line(results: dict[str, Any]) -> str:
    """The authors' Frozen-QK at initialisation per width: its logit spread against n sigma^2
    and its uniformity, then and after training (the arithmetic of docs/width.md)."""
    at_init = results["frozen_attention_at_init"]["authors"]
    trained = results["frozen_attention_trained"]["authors"]
    cells = []
    for w, seeds, after in zip(results["widths"], at_init, trained, strict=True):
        spread = [s["logit_spread"] for s in seeds]
        predicted = w * INIT_STD**2
        cells.append(
            f"n = {w}: spread {mean_std(spread)} (n sigma^2 {predicted:.3f}, ratio "
            f"{statistics.mean(spread) / predicted:.2f}), uniformity "
            f"{mean_std([s['uniformity'] for s in seeds])} "
            f"({mean_std([s['uniformity'] for s in after])} trained)"
        )
    return "Frozen-QK (authors) at initialisation: " + "; ".join(cells) + "."


def width_reading() -> str:
    """docs/constructions.md: per claim, whether its verdict moves with width, from each
    committed width output (``reproduce width`` or ``width-depth``; the reading rule of
    docs/width.md), with the authors' frozen attention where the output asked retrieval."""
    parts = []
    for path in sorted(common.RESULTS.glob("*/width*/results.json")):
        results = _json(path)
        widths = ", ".join(str(w) for w in results["widths"])
        first, last = results["first_seed"], results["first_seed"] + results["seeds"] - 1
        seeds = f"seed {first}" if first == last else f"seeds {first}-{last}"
        tuned = _json(path.parent.parent / "claims.json").get("tune")
        how = "tuned by the protocol" if tuned else "untuned: one rate per series"
        parts += [
            f"`results/{path.parent.parent.name}` (`{path.parent.name}`, widths {widths}, "
            f"{seeds}, {how}):",
            "",
            reading(results),
            "",
        ]
        if "frozen_attention_at_init" in results:
            parts += [_frozen_attention_line(results), ""]
    return "\n".join(parts).strip() or "(no width output committed yet)"


def _verdict_accuracies(output: Path) -> dict[tuple[str, int], list[float]]:
    """(model, width) -> the test accuracies of the verdict runs whose records ``output``
    keeps (``mixit records``, in its archive), in seed order; tuning-seed runs are validation
    scores and are left out."""
    found: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for summary_path in sorted(common.unpacked(output).glob("runs/*/summary.json")):
        summary = _json(summary_path)
        if summary.get("evaluated_on") != "test":
            continue
        width = _json(summary_path.parent / "config.json")["model"]["n_embd"]
        key = (summary["model"], width)
        found.setdefault(key, []).append((summary["seed"], summary["metrics"]["test_accuracy"]))
    return {key: [value for _, value in sorted(pairs)] for key, pairs in found.items()}


def width_tuning() -> str:
    """docs/width.md: each committed tuning of a width experiment (``tuning.json`` beside a
    ``width*`` report, or kept alone where the pass did not finish): per series and width, the
    protocol's choice, the validation score it rests on, and the verdict runs kept."""
    lines = []
    for path in sorted(common.RESULTS.glob("*/tuning.json")):
        records = _json(path)  # reproduce's: a list of groups; compare's: a dict by model
        groups = [
            g
            for g in (records if isinstance(records, list) else [])
            if any(e.startswith("width") for e in g["experiments"])
        ]
        if not groups:
            continue
        verdicts = _verdict_accuracies(path.parent)
        lines += [
            f"`results/{path.parent.name}`:",
            "",
            "| width | model | chosen lr | init | edge | steps | validation at the budget "
            "| verdict test accuracy (kept runs, by seed) |",
            "|---:|---|---:|---|---|---:|---:|---|",
        ]
        for group in sorted(groups, key=lambda g: (g["run_overrides"]["model.n_embd"], g["model"])):
            width = group["run_overrides"]["model.n_embd"]
            kept = verdicts.get((group["model"], width), [])
            lines.append(
                f"| {width} | {group['model']} | {group['train.lr']:.3g} | {group['init']} "
                f"| {group['edge']} | {group['steps']:,} | {group['budgets'][-1]['score']:.3f} "
                f"| {' / '.join(f'{v:.3f}' for v in kept) or '-'} |"
            )
        lines.append("")
    return "\n".join(lines).strip() or "(no tuned width output committed yet)"


def width_timing() -> str:
    """docs/width.md: the cost of each committed width output, from the calls its
    ``timing.json`` recorded (a call cut off before its end records nothing) and the runs' own
    training seconds in ``results.csv`` (each output's README says where it ran)."""
    lines = [
        "| output | verdict runs | their training seconds, summed | recorded calls: jobs, "
        "wall time, runs trained |",
        "|---|---:|---:|---|",
    ]
    for path in sorted(common.RESULTS.glob("*/width*/results.json")):
        output = path.parent.parent
        runs = {
            row["run_dir"]: float(row["train_seconds"])
            for row in read_results_csv(output / "results.csv")
        }
        calls = "; ".join(
            f"{call['jobs']} jobs, {call['train_wall_seconds']:,.0f} s, {call['runs_trained']} runs"
            for call in _json(output / "timing.json")["calls"]
        )
        lines.append(
            f"| `results/{output.name}` | {len(runs)} | {sum(runs.values()):,.0f} s | {calls} |"
        )
    return "\n".join(lines)
