"""docs/mixit-limits.md: what MixiT can and cannot do, read from the committed outputs alone:
its verdict at each size of every committed axis, on each task of the rows' suite, the layer a
necessity map says needs attention, and what the reference's retrieval runs rest on."""

from __future__ import annotations

import json
from typing import Any

from figures.common import RESULTS
from mixit.study.litmus import VERDICTS

MODEL = "mixit"


def _reading(result: dict[str, Any]) -> str:
    """MixiT's verdict in one comparison, or why there is none."""
    litmus = result["litmus"]
    if litmus.get("no_reference"):
        return "no verdict (the reference did not learn)"
    row = next((r for r in litmus.get("rows", []) if r["model"] == MODEL), None)
    if row is None:
        return "not trained"
    return f"{VERDICTS[row['matches']]} ({row['difference']:+.3f})"


def by_size() -> str:
    """Each committed axis: MixiT's reading at each value, and where the axis says it breaks."""
    lines = ["| output | task, model | knob | MixiT at each value | where it breaks |"]
    lines.append("|---|---|---|---|---|")
    for found in sorted(RESULTS.glob("axis-*/axis.json")):
        axis = json.loads(found.read_text())
        first = axis["points"][0]["compare"]
        arch = first.get("overrides", {}).get("model.arch", "mixit's decoder")
        values = "; ".join(f"{p['value']}: {_reading(p['compare'])}" for p in axis["points"])
        point = next(b for b in axis["break_points"] if b["model"] == MODEL)
        at = "" if point["at"] is None else f" at {point['at']}"
        why = f" ({point['why']})" if point["why"] else ""
        lines.append(
            f"| `results/{found.parent.name}` | {first['task']}, {arch} | `{axis['key']}` "
            f"| {values} | {point['outcome']}{at}{why} |"
        )
    return "\n".join(lines)


def by_task() -> str:
    """Each task of the rows' suite (``results/rows-tiny``): MixiT's reading beside the rows
    past the paper that share its family."""
    lines = ["| task | MixiT | mixit-learned | uniform | no-mixing |", "|---|---|---|---|---|"]
    for found in sorted((RESULTS / "rows-tiny").glob("*/compare.json")):
        result = json.loads(found.read_text())
        rows = {r["model"]: r for r in result["litmus"].get("rows", [])}
        cells = [
            f"{VERDICTS[rows[m]['matches']]} ({rows[m]['difference']:+.3f})" if m in rows else "-"
            for m in (MODEL, "mixit-learned", "uniform", "no-mixing")
        ]
        lines.append(f"| {found.parent.name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def what_explains() -> str:
    """The necessity maps' readings, and the component each verdict's reference run rests on
    most (``results/verdict-ablations``: its largest mean-ablation drop, per task and seed)."""
    lines = []
    for found in sorted(RESULTS.glob("per-layer-*/necessity.json")):
        necessity = json.loads(found.read_text())
        for cell in necessity["layers"]:
            lines.append(
                f"- `results/{found.parent.name}`, layer {cell['layer']}: {cell['reading']}"
            )
    ablations = RESULTS / "verdict-ablations" / "ablations.json"
    for comparison in json.loads(ablations.read_text())["comparisons"]:
        for run in comparison["runs"]:
            top = run["components"][0]
            lines.append(
                f"- `results/verdict-ablations`, {comparison['task']}, standard seed "
                f"{run['seed']}: mean-ablating {top['component']} takes it from "
                f"{run['unablated']:.3f} to {top['metric']:.3f}"
            )
    return "\n".join(lines)


def frozen_draws() -> str:
    """docs/reviewers.md: each committed ``results/draws-*`` (``compare --frozen-draws``): per
    model that keeps a draw, its verdict on each draw, the reading over them and its spread;
    and C10 on each draw where the output holds ``circuit.json`` (studies/draws_circuit.py)."""
    lines = []
    for found in sorted(RESULTS.glob("draws-*/draws.json")):
        draws = json.loads(found.read_text())["draws"]
        first = json.loads(next(found.parent.glob("draw-*/compare.json")).read_text())
        lines.append(f"- `results/{found.parent.name}` ({first['task']}, {first['metric']}):")
        for d in draws:
            verdicts = ", ".join(
                f"{seed}: {VERDICTS[v]}" for seed, v in zip(d["draws"], d["verdicts"], strict=True)
            )
            spread = d["spread"]
            split = (
                f"; std {spread['draw']:.4f} between draws, {spread['seed']:.4f} between seeds, "
                f"{spread['residual']:.4f} neither"
                if spread
                else ""
            )
            lines.append(f"  - {d['model']}: {verdicts}. {d['reading']}{split}")
        circuit = found.parent / "circuit.json"
        if circuit.is_file():
            lines.append(_circuit_line(json.loads(circuit.read_text())))
    return "\n".join(lines) or "No committed frozen draws yet."


def _circuit_line(circuit: dict[str, Any]) -> str:
    """C10 on each draw of a retrieval draws output (``circuit.json``)."""
    per_draw = ", ".join(
        f"{d['frozen_seed']}: {'holds' if d['holds'] else 'does not hold'}"
        for d in circuit["draws"]
    )
    return (
        f"  - C10, frozen-qk's circuit on every seed (threshold {circuit['threshold']}): "
        f"{per_draw}; holds on {circuit['held_on']} of {len(circuit['draws'])} draws"
    )
