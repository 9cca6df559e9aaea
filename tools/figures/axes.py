"""docs/your-task.md: each committed ``compare --axis`` output (``results/axis-*``), its
figure, where each model breaks and its score over the axis."""

from __future__ import annotations

import json

from figures.common import RESULTS


def _model_rows(reading: dict) -> list[str]:
    """One row per model: its break point (and why) and its score with its seed spread."""
    scores = {s["model"]: s for s in reading["scores"]}
    rows = []
    for point in reading["break_points"]:
        score = scores[point["model"]]
        where = point["outcome"] if point["at"] is None else f"{point['outcome']} at {point['at']}"
        why = f" ({point['why']})" if point["why"] else ""
        rows.append(
            f"| {point['model']} | {where}{why} "
            f"| {score['relative']:+.3f} ± {score['spread']:.3f} |"
        )
    return rows


def axis_results() -> str:
    """Per ``results/axis-*`` folder: what ran, its figure and its models' readings."""
    blocks = []
    for out in sorted(RESULTS.glob("axis-*/axis.json")):
        reading = json.loads(out.read_text())
        first = reading["points"][0]["compare"]
        arch = first.get("overrides", {}).get("model.arch", "mixit")
        values = ", ".join(str(v) for v in reading["values"])
        stopped = reading["stopped_at"]
        ended = f"; stopped at {stopped}" if stopped is not None else ""
        blocks += [
            f"**`results/{out.parent.name}`**: {first['task']} along `{reading['key']}` = "
            f"{values}{ended}; `{arch}`, preset {first['preset']}, seeds "
            f"{', '.join(str(s) for s in first['seeds'])}, tuned (`--tune lr`).",
            "",
            f"![{out.parent.name}](../results/{out.parent.name}/axis.png)",
            "",
            "| model | break point | score over the axis (0: chance, 1: the reference) |",
            "|---|---|---:|",
            *_model_rows(reading),
            "",
        ]
    return "\n".join(blocks).rstrip()
