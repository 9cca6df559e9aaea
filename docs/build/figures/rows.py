"""The rows past the paper's five (docs/rows.md), as the committed outputs have them: the
comparison of the rows on each task (``results/rows-tiny``, a suite: one folder per task)
and each necessity map (``results/per-layer-*``, ``compare --per-layer``)."""

from __future__ import annotations

import json
from pathlib import Path

from figures.axes import comparison_table
from figures.common import RESULTS
from mixit.study.litmus import VERDICTS

ROWS = RESULTS / "rows-tiny"


def rows_compared() -> str:
    """Each task of ``results/rows-tiny``: every model's rate, seeds, mean and reading."""
    blocks = []
    for found in sorted(ROWS.glob("*/compare.json")):
        blocks += [*comparison_table(found.parent.name, json.loads(found.read_text())), ""]
    return "\n".join(blocks).rstrip() or "No committed comparison of the rows yet."


def necessity_maps() -> str:
    """Each ``results/per-layer-*`` map: per layer, VARIANT there alone and the standard
    mixer there alone, each with its mean and verdict, and the reading."""
    blocks = []
    for found in sorted(RESULTS.glob("per-layer-*/necessity.json")):
        blocks += [*necessity_table(found), ""]
    return "\n".join(blocks).rstrip() or "No committed necessity map yet."


def necessity_table(path: Path) -> list[str]:
    found = json.loads(path.read_text())
    variant = found["variant"]
    lines = [
        f"- **{found['task']}**, `--per-layer {variant}` (`results/{path.parent.name}`; "
        f"{found['metric']}; standard {found['reference_mean']:.3f}, {variant} everywhere "
        f"{found['variant_mean']:.3f}, {VERDICTS[found['variant_matches']]}):",
        "",
        f"  | layer | {variant} in this layer only | standard in this layer only | reading |",
        "  |---:|---|---|---|",
    ]
    for cell in found["layers"]:
        lines.append(
            f"  | {cell['layer']} | {cell['only_mean']:.3f} ({VERDICTS[cell['only_matches']]}) "
            f"| {cell['all_but_mean']:.3f} ({VERDICTS[cell['all_but_matches']]}) "
            f"| {cell['reading']} |"
        )
    return lines
