"""Each committed ``compare --axis`` output (``results/axis-*``): in docs/your-task.md its
figure, where each model breaks and its score over the axis (or, for an axis under way, the
values it has); in its own README the comparison at each value."""

from __future__ import annotations

import json
from pathlib import Path

from figures.common import RESULTS
from mixit.study.litmus import VERDICTS, verdict_words


def _per_value(model: str, counted: list[dict]) -> str:
    """The model's reading at each counted value: where it breaks is not all the axis says
    (a model inconclusive at its first value may fall short at every later one)."""
    words = []
    for point in counted:
        row = next(r for r in point["compare"]["litmus"]["rows"] if r["model"] == model)
        words.append(f"{point['value']}: {VERDICTS[row['matches']]}")
    return ", ".join(words)


def _model_rows(reading: dict) -> list[str]:
    """One row per model: its break point (and why), its reading at each value, and its score
    with its seed spread."""
    scores = {s["model"]: s for s in reading["scores"]}
    counted = [p for p in reading["points"] if p["value"] != reading["stopped_at"]]
    # An automatic or a stopped axis ends where it stopped, not where the user chose.
    open_ended = "separated_at" in reading or reading["stopped_at"] is not None
    rows = []
    for point in reading["break_points"]:
        score = scores[point["model"]]
        where = point["outcome"] if point["at"] is None else f"{point['outcome']} at {point['at']}"
        if point["outcome"] == "holds" and open_ended and counted:
            where = f"holds up to {counted[-1]['value']}"
        why = f" ({point['why']})" if point["why"] else ""
        rows.append(
            f"| {point['model']} | {where}{why} | {_per_value(point['model'], counted)} "
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
        values = ", ".join(str(p["value"]) for p in reading["points"])
        stopped = reading["stopped_at"]
        ended = f"; the reference did not learn at {stopped}" if stopped is not None else ""
        if "separated_at" in reading:
            separated = reading["separated_at"]
            ended += (
                f"; `--axis auto`: the models separate at {separated}"
                if separated is not None
                else "; `--axis auto`: no separation within its doublings"
            )
        blocks += [
            f"**`results/{out.parent.name}`**: {first['task']} along `{reading['key']}` = "
            f"{values}{ended}; `{arch}`, preset {first['preset']}, seeds "
            f"{', '.join(str(s) for s in first['seeds'])}, tuned (`--tune lr`).",
            "",
            f"![{out.parent.name}](../results/{out.parent.name}/axis.png)",
            "",
            "| model | break point | reading at each value "
            "| score over the axis (0: chance, 1: the reference) |",
            "|---|---|---|---:|",
            *_model_rows(reading),
            "",
        ]
    for axis in axis_folders():
        if not (axis / "axis.json").is_file():
            done = [folder.name for folder in _value_folders(axis)]
            blocks += [
                f"**`results/{axis.name}`**: under way, no reading over the axis yet; "
                f"values compared so far: {', '.join(done) if done else 'none'} "
                f"(its README has their tables).",
                "",
            ]
    return "\n".join(blocks).rstrip()


def axis_folders() -> list[Path]:
    """Every committed axis: a ``results/axis-*`` folder with its README, finished or not."""
    return sorted(readme.parent for readme in RESULTS.glob("axis-*/README.md"))


def _value_folders(axis: Path) -> list[Path]:
    """The folder of each value of ``axis`` that has a comparison, in the axis's order; a value
    folder is named ``KEY=VALUE``, and an axis cut off mid-way has fewer."""
    folders = [found.parent for found in axis.glob("*=*/compare.json")]
    return sorted(folders, key=lambda folder: float(folder.name.split("=", 1)[1]))


def _rate(tuned: dict | None) -> str:
    """A model's tuned rate, and whether its tuning saw it learn at any rate."""
    if not tuned:
        return "preset"
    rate = f"{tuned['train.lr']:.2g}"
    return rate if tuned.get("learned", True) else f"{rate} (learned at no rate)"


def axis_values(axis: Path) -> str:
    """Per value of one ``results/axis-*`` folder, its comparison as ``compare.json`` has it:
    each seed's metric, the mean, the tuned rate and the litmus reading. It reads the value
    folders, not ``axis.json``, so an axis still under way shows the values it has."""
    blocks = []
    for folder in _value_folders(axis):
        blocks += [
            *comparison_table(folder.name, json.loads((folder / "compare.json").read_text())),
            "",
        ]
    return "\n".join(blocks).rstrip()


def comparison_table(label: str, compare: dict) -> list[str]:
    """One comparison as its ``compare.json`` has it, under the bold ``label``: each model's
    tuned rate, each seed's metric, the mean and the litmus reading."""
    tuned = compare.get("tuned") or {}
    budgets = sorted({t["steps"] for t in tuned.values()})
    budget = f"; budget {', '.join(f'{b:,}' for b in budgets)} steps" if budgets else ""
    readings = {row["model"]: row for row in compare["litmus"]["rows"]}
    seeds = ", ".join(str(seed) for seed in compare["seeds"])
    lines = [
        f"- **{label}** ({compare['metric']}; chance {compare['chance']:.3g}{budget}):",
        "",
        f"  | model | rate | seeds {seeds} | mean | litmus reading |",
        "  |---|---:|---|---:|---|",
    ]
    for row in compare["rows"]:
        model = row["model"]
        if model == "standard":
            reading = "reference"
        elif model in readings:
            reading = f"{verdict_words(readings[model])}: {readings[model]['reading']}"
        else:
            reading = "no verdict"
        values = ", ".join(f"{v:.3f}" for v in row["values"])
        lines.append(
            f"  | {model} | {_rate(tuned.get(model))} | {values} | {row['mean']:.3f} | {reading} |"
        )
    if compare["litmus"].get("no_reference"):
        lines += [
            "",
            "  No verdict at this value: the standard model is no reference here ("
            f"{'; '.join(compare['litmus']['no_reference'])}; next: "
            f"{compare['litmus']['next']}).",
        ]
    return lines


# Each committed axis's README quotes its per-value tables from the block named after it.
AXES = {f"values-{axis.name}": axis for axis in axis_folders()}
