"""``compare --explain``: when a variant falls short, what the reference's metric rests on.

The reference's run on the first verdict seed is mean-ablated component by component
(``mixit.analysis.ablation``), and the components whose ablation costs the most are printed with
their head scores, e.g. "in standard (seed 0), ablating L0.H0 (previous-token 0.54, induction
0.16) takes test accuracy from 0.998 to 0.402": the evidence, from the runs themselves, behind
the litmus test's sentence about which circuit the task needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mixit.analysis.ablation import Ablation, ablate
from mixit.common.io import write_json
from mixit.common.plots import metric_label
from mixit.training.rundir import load_run

REFERENCE = "standard"
SHOWN = 3  # components printed, largest drop first
ROWS = 512  # test rows each ablation is scored on


@dataclasses.dataclass(frozen=True)
class Explanation:
    """The reference run ablated (its folder and seed), for the variants that fell short."""

    short: list[str]
    run_dir: str
    seed: int
    ablation: Ablation


def explain(result: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> Explanation | None:
    """The reference's first-seed run (``rows``: results.csv's) ablated, when a verdict of
    ``result`` (compare.json) is "falls short"; None when none is, or its run is gone."""
    short = [r["model"] for r in result["litmus"].get("rows", []) if r["matches"] is False]
    if not short:
        return None
    seed = result["seeds"][0]
    run = next(
        (r for r in rows if r["model"] == REFERENCE and int(r["seed"]) == seed and r["run_dir"]),
        None,
    )
    if run is None or not (Path(run["run_dir"]) / "model.safetensors").is_file():
        return None
    model, config = load_run(run["run_dir"])
    return Explanation(short, run["run_dir"], seed, ablate(model, config, ROWS))


def format_explanation(found: Explanation) -> str:
    """The components whose ablation costs the reference most, one line each."""
    ablation, metric = found.ablation, metric_label(found.ablation.metric)
    verb = "falls" if len(found.short) == 1 else "fall"
    lines = [
        f"explained ({', '.join(found.short)} {verb} short): in {REFERENCE} (seed {found.seed}), "
        f"mean-ablating one component at a time on {ROWS} test rows"
    ]
    for c in ablation.components[:SHOWN]:
        scores = (
            f" (previous-token {c.previous_token:.2f}, induction {c.induction:.2f})"
            if c.previous_token is not None
            else ""
        )
        lines.append(
            f"  ablating {c.component}{scores} takes {metric} from {ablation.unablated:.3f} "
            f"to {c.metric:.3f}"
        )
    return "\n".join(lines)


def write_explanation(found: Explanation, out: Path) -> None:
    """OUT/explain.json."""
    write_json(out / "explain.json", dataclasses.asdict(found))
