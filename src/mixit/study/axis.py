"""The litmus test along a difficulty axis: where each model stops matching the reference.

``compare --axis task.max_pairs=4,8,16`` runs one comparison per value (same seeds, each
model tuned at that value when the comparison tunes), in ``OUT/KEY=VALUE/``, and reads:

- a model's **break point**: the first value at which it falls short of the reference by the
  litmus reading; it **holds** when it matches at every value; it is **inconclusive at v**
  when the first reading that is not a match is inconclusive there;
- the axis **stops** at the first value where the reference does not learn (no comparison
  against it means anything), and nothing beyond it trains;
- one **score per model** over the axis, as MAD aggregates its tasks: the mean over the
  values of the model's score relative to the reference (0: chance, 1: the reference), per
  seed, then the mean and spread over the seeds.

``--axis default`` takes the task's own knob (``TaskSpec.axis``) at ``DEFAULT_FACTORS`` of
the preset's value. Writes ``OUT/axis.csv`` (one row per run), ``OUT/axis.json`` and
``OUT/axis.png`` (one curve per model with its seed band, chance, the break points).
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.common.io import write_json, write_text
from mixit.config.overrides import Settings, parse_overrides
from mixit.study.axis_figure import BREAKS, plot_axis
from mixit.study.comparison import AxisPoint, AxisResult, AxisScore, BreakPoint, ComparisonResult
from mixit.study.judge import table_row
from mixit.study.litmus import DEFAULT_TOLERANCE, VERDICTS, reading
from mixit.study.words import Verdict
from mixit.tasks import get_task
from mixit.training.resolve import check_examples, resolve_config, stored_config
from mixit.tuning.rules import rising_at_end

# ``--axis default``: the preset's value of the task's knob times these.
DEFAULT_FACTORS = (0.5, 1, 2, 4)
# ``--axis auto``: the preset's value, doubled at most this many times (up to 16x).
AUTO_DOUBLINGS = 4
HOLDS, UNREAD = "holds", "unread"
INCONCLUSIVE = Verdict.INCONCLUSIVE
# A custom task's files: along this key, each value is a (train, test) pair of JSONL files.
FILES_KEY = "task.data_files"


@dataclass(frozen=True)
class Axis:
    """A dotted setting and the values it takes, easiest first (``task.max_pairs``, 4, 8)."""

    key: str
    values: tuple[Any, ...]
    # ``--axis auto``: stop at the first value where the models separate (``separated``).
    until_separated: bool = False
    # ``--axis default``: the smallest values the task refused, each "KEY=VALUE: why".
    left_out: tuple[str, ...] = ()

    def folder(self, value: Any) -> str:
        """``KEY=VALUE``; a value that names files (a pair of data files) goes by its place
        on the axis instead (``task.data_files=2``), since a path cannot be a folder's name."""
        if any(mark in str(value) for mark in ("/", ",", "\\")):
            return f"{self.key}={self.values.index(value) + 1}"
        return f"{self.key}={value}"


def parse_axis(text: str, task: str, preset: str, overrides: Settings) -> Axis:
    """``KEY=v1,v2,...``, ``default`` (the task's own knob around its preset's value) or
    ``auto`` (that knob doubled from the preset's value until the models separate), once every
    value of it is checked (``checked``)."""
    axis, leave_out = asked_axis(text, task, preset, overrides)
    return checked(axis, task, preset, overrides, leave_out)


def asked_axis(text: str, task: str, preset: str, overrides: Settings) -> tuple[Axis, bool]:
    """The axis ``text`` asks for, before its values are checked, and whether the task's
    refusal of its smallest values leaves them out (``--axis default``) or fails."""
    if text in ("default", "auto"):
        spec = get_task(task)
        key = spec.axis
        if key is None:
            raise UsageError(f"task {task} has no knob of its own: give --axis KEY=v1,v2,...")
        # An override of the knob is where the walk starts (the preset's value otherwise).
        config = resolve_config(task, "standard", preset, 0, overrides)
        base = getattr(config.task, key.split(".", 1)[1])
        if not base:
            raise UsageError(
                f"--axis {text} walks {key} from its value, here {base}: set {key}=N (task "
                "custom: with its task.generator), or give --axis KEY=v1,v2,..."
            )
        if text == "auto":
            return Axis(key, tuple(base * 2**k for k in range(AUTO_DOUBLINGS + 1)), True), False
        if preset in spec.axis_values:
            return Axis(key, tuple(spec.axis_values[preset])), False
        return Axis(key, tuple(sorted({max(1, round(base * f)) for f in DEFAULT_FACTORS}))), True
    if "=" not in text:
        raise UsageError(f"--axis '{text}' is not KEY=v1,v2,... or default")
    ((key, raw),) = parse_overrides([text]).items()
    values = tuple(v.strip() for v in raw.split(",") if v.strip())
    if key == FILES_KEY:  # JSONL data: the axis is a list of (train, test) file pairs
        if len(values) % 2:
            raise UsageError(
                f"--axis {FILES_KEY} takes pairs: train1.jsonl,test1.jsonl,train2.jsonl,... "
                f"(got {len(values)} files)"
            )
        values = tuple(f"{a},{b}" for a, b in zip(values[::2], values[1::2], strict=True))
    if len(values) < 2 or len(set(values)) < len(values):
        raise UsageError(f"--axis {key} needs two or more distinct values, got '{raw}'")
    if key in overrides and not any(_same(overrides[key], value) for value in values):
        raise UsageError(
            f"--axis {key} and the override {key}={overrides[key]} disagree (an override of the "
            "axis's key must be one of its values)"
        )
    return Axis(key, values), False


def _same(given: Any, value: str) -> bool:
    """Whether an override and an axis value are one setting (4 and 4.0 are)."""
    try:
        return float(given) == float(value)
    except (TypeError, ValueError):
        return str(given).strip() == value


def checked(
    axis: Axis, task: str, preset: str, overrides: Settings, leave_out: bool = False
) -> Axis:
    """``axis`` once every value of it makes a run the task accepts, its examples drawn
    (``check_examples``; a UsageError naming the first value that does not), so that a bad
    value fails before anything trains. An ``--axis auto`` stops doubling before the first
    value the task refuses; with ``leave_out`` (``--axis default``) the smallest values the
    task refuses are left out, as long as two remain."""
    accepted: list[Any] = []
    left_out: list[str] = []
    read_as: dict[str, Any] = {}  # each value as the config reads it: 20 and 020 are one
    for value in axis.values:
        try:
            config = resolve_config(task, "standard", preset, 0, {**overrides, axis.key: value})
            check_examples(config)
        except UsageError as error:
            if axis.until_separated and len(accepted) > 1:
                break
            if leave_out and not accepted:
                left_out.append(f"{axis.key}={value}: {error}")
                continue
            raise UsageError(f"--axis {axis.key}={value}: {error}") from None
        section, name = axis.key.split(".", 1)
        same = repr(getattr(getattr(config, section), name))
        if same in read_as:
            twice = f"{read_as[same]} and {value} are the same value ({same})"
            raise UsageError(f"--axis {axis.key}: {twice}; give distinct values")
        read_as[same] = value
        accepted.append(value)
    if len(accepted) < 2:
        raise UsageError(f"--axis {left_out[-1]}; fewer than two values of it are left")
    return Axis(axis.key, tuple(accepted), axis.until_separated, tuple(left_out))


def along_axis(
    axis: Axis,
    out: Path,
    overrides: Settings,
    compare_point: Callable[[Path, dict[str, Any]], ComparisonResult],
) -> AxisResult:
    """One comparison per value (``compare_point(folder, overrides)`` returns its
    compare.json), in order, until the reference does not learn (or, for ``--axis auto``, the
    models separate); then the reading, written to ``out/axis.json``, ``out/axis.csv`` and
    ``out/axis.png``."""
    points: list[AxisPoint] = []
    for at, value in enumerate(axis.values, 1):
        # Which value trains, since each run's own progress names only its task and model.
        up_to = "up to " if axis.until_separated else ""
        print(
            f"mixit: {axis.key}={value}, value {at} of {up_to}{len(axis.values)}", file=sys.stderr
        )
        point = compare_point(out / axis.folder(value), {**overrides, axis.key: value})
        points.append({"value": value, "compare": point})
        if point["litmus"].get("no_reference"):
            break
        if axis.until_separated and separated(points):
            break
    result = axis_reading(axis, points)
    if axis.until_separated:
        result["separated_at"] = points[-1]["value"] if separated(points) else None
    write_json(out / "axis.json", result)
    write_text(out / "axis.csv", axis_csv(result))
    plot_axis(out / "axis.png", result)
    return result


def point_from_runs(
    task: str,
    seeds: Sequence[int],
    summaries: Mapping[str, Sequence[Mapping[str, Any]]],
    tolerance: float | None = None,
    tuned: Mapping[str, Mapping[str, Any]] | None = None,
) -> ComparisonResult:
    """One value's comparison as compare.json holds it, from finished runs' summaries by
    model (the standard model's first; each model's in the order of ``seeds``): how an
    experiment of ``reproduce`` reads an axis (figure 2). A run whose summary names its
    folder is read there for whether it was still rising at its budget's end; ``tuned``: each
    model's tuning record, where one chose its settings (compare.json's ``tuned``)."""
    spec = get_task(task)
    rows = []
    for model, runs in summaries.items():
        row = table_row(model, runs, spec.metric)
        row["rising"] = [_rising(summary) for summary in runs]
        rows.append(row)
    chances = [s["chance"] for runs in summaries.values() for s in runs if "chance" in s]
    result: ComparisonResult = {
        "task": task,
        "metric": spec.metric,
        "higher_is_better": spec.higher_is_better,
        "seeds": list(seeds),
        "chance": statistics.fmean(chances) if chances else None,
        "rows": rows,
    }
    if tuned:
        result["tuned"] = {model: dict(record) for model, record in tuned.items()}
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE.get(spec.metric, 0.02)
    steps = next(iter(summaries.values()))[0]["steps"]
    result["litmus"] = reading(result, tolerance, steps)
    return result


def _rising(summary: Mapping[str, Any]) -> bool:
    folder = Path(summary.get("run_dir", ""))
    if not (folder / "metrics.jsonl").is_file() or not (folder / "config.json").is_file():
        return False
    config = stored_config(json.loads((folder / "config.json").read_text()))
    return rising_at_end(folder, config, summary.get("stopped", "budget"))


def separated(points: Sequence[AxisPoint]) -> bool:
    """Whether a model that matched the reference at every earlier value falls short at the
    last one: where ``--axis auto`` stops."""
    verdicts = [{r["model"]: r["matches"] for r in p["compare"]["litmus"]["rows"]} for p in points]
    return any(
        matches is False and all(earlier.get(model) is True for earlier in verdicts[:-1])
        for model, matches in verdicts[-1].items()
    )


def axis_reading(axis: Axis, points: Sequence[AxisPoint]) -> AxisResult:
    """axis.json: the points' comparisons, where the axis stopped, the break points and the
    scores."""
    counted = [p for p in points if not p["compare"]["litmus"].get("no_reference")]
    stopped = None if len(counted) == len(points) else points[len(counted)]["value"]
    models = [r["model"] for r in points[0]["compare"]["rows"] if r["model"] != "standard"]
    return {
        "key": axis.key,
        "values": list(axis.values),
        "points": list(points),
        "stopped_at": stopped,
        "break_points": [break_point(model, counted) for model in models],
        "scores": [axis_score(model, counted) for model in models],
    } | ({"left_out": list(axis.left_out)} if axis.left_out else {})


def break_point(model: str, counted: Sequence[AxisPoint]) -> BreakPoint:
    """The first value at which ``model`` does not match the reference, and how; ``unread``
    when the reference learned at no value."""
    if not counted:
        return BreakPoint(model=model, outcome=UNREAD, at=None, why="no reference at any value")
    for point in counted:
        row = next(r for r in point["compare"]["litmus"]["rows"] if r["model"] == model)
        if row["matches"] is not True:
            outcome = BREAKS if row["matches"] is False else INCONCLUSIVE
            return BreakPoint(model=model, outcome=outcome, at=point["value"], why=row["reading"])
    return BreakPoint(model=model, outcome=HOLDS, at=None, why="")


def axis_score(model: str, counted: Sequence[AxisPoint]) -> AxisScore:
    """Per seed, the mean over the counted values of (model - chance) / (reference - chance);
    then their mean and spread (None for one seed)."""
    relative_by_point = []
    for point in counted:
        rows = {r["model"]: r for r in point["compare"]["rows"]}
        chance = point["compare"]["chance"]
        pairs = zip(rows[model]["values"], rows["standard"]["values"], strict=True)
        relative_by_point.append([(v - chance) / (ref - chance) for v, ref in pairs])
    per_seed = list(zip(*relative_by_point, strict=True))  # (seeds, points)
    means = [statistics.fmean(values) for values in per_seed]
    if not means:
        return AxisScore(model=model, relative=float("nan"), spread=None)
    spread = statistics.stdev(means) if len(means) > 1 else None
    return AxisScore(model=model, relative=statistics.fmean(means), spread=spread)


CSV_FIELDS = ("value", "model", "seed", "metric", "score", "lr", "steps", "stopped")


def axis_csv(result: Mapping[str, Any]) -> str:
    """axis.csv: one row per run, every point's seeds."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for point in result["points"]:
        comparison = point["compare"]
        for row in comparison["rows"]:
            tuned = comparison.get("tuned", {}).get(row["model"], {}).get("overrides", {})
            for seed, score, stopped in zip(
                comparison["seeds"], row["values"], row["stopped"], strict=True
            ):
                writer.writerow(
                    {
                        "value": point["value"],
                        "model": row["model"],
                        "seed": seed,
                        "metric": comparison["metric"],
                        "score": score,
                        "lr": tuned.get("train.lr", ""),
                        "steps": tuned.get("train.steps", ""),
                        "stopped": stopped,
                    }
                )
    return buffer.getvalue()


def value_readings(result: Mapping[str, Any], model: str) -> str:
    """``model``'s reading at each value the axis counts, with the reason where it is not a
    match: ``4: matches, 8: falls short (trained attention or MLP blocks are needed)``."""
    words = []
    for point in result["points"]:
        if point["value"] == result["stopped_at"]:
            continue
        row = next(r for r in point["compare"]["litmus"]["rows"] if r["model"] == model)
        why = row.get("why") or ("" if row["matches"] else row.get("reading", ""))
        words.append(f"{point['value']}: {VERDICTS[row['matches']]}" + (f" ({why})" if why else ""))
    return ", ".join(words) or "no value read: the reference learned at none"


def format_axis(result: Mapping[str, Any]) -> str:
    """The printed reading: where each model breaks, and its score over the axis."""
    values = ", ".join(str(p["value"]) for p in result["points"])
    lines = [f"axis {result['key']}: {values}"]
    lines += [f"  left out, the task refuses it: {why}" for why in result.get("left_out", [])]
    if result["stopped_at"] is not None:
        lines.append(
            f"  the reference did not learn at {result['key']}={result['stopped_at']}: "
            "the axis stops there"
        )
    if "separated_at" in result and result["stopped_at"] is None:
        lines.append(
            f"  the models separate at {result['key']}={result['separated_at']}"
            if result["separated_at"] is not None
            else f"  no separation up to {result['key']}={result['points'][-1]['value']} "
            f"(--axis auto doubles the preset's value at most {AUTO_DOUBLINGS} times)"
        )
    scores = {s["model"]: s for s in result["scores"]}
    head = f"  {'model':<11} {'break point':<29} score over the axis"
    lines.append(f"{head} (0: chance, 1: the reference)")
    counted = [p["value"] for p in result["points"] if p["value"] != result["stopped_at"]]
    held = "holds over the axis"
    # An automatic axis ends where it stopped doubling, not where the user chose: the model
    # held as far as it was tried.
    if counted and (result["stopped_at"] is not None or "separated_at" in result):
        held = f"holds up to {counted[-1]}"
    for b in result["break_points"]:
        where = {
            HOLDS: held,
            BREAKS: f"breaks at {b['at']}",
            INCONCLUSIVE: f"inconclusive at {b['at']}",
            UNREAD: "no reading",
        }[b["outcome"]]
        score = scores[b["model"]]
        spread = "n/a" if score["spread"] is None else f"{score['spread']:.3f}"
        value = "n/a" if score["relative"] != score["relative"] else f"{score['relative']:+.3f}"
        lines.append(f"  {b['model']:<11} {where:<29} {value} ± {spread}")
    lines.append("  reading at each value, with why where it is not a match:")
    for b in result["break_points"]:
        lines.append(f"  {b['model']:<11} {value_readings(result, b['model'])}")
    return "\n".join(lines)
