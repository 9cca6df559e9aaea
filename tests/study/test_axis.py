"""`compare --axis`: break points, the reference stopping the axis, the score over the axis,
and the files it writes, on planted comparisons and on one real short run."""

import csv
import json
import math
import re

import pytest

from mixit.cli import main, overrides_last
from mixit.common.errors import UsageError
from mixit.study.axis import Axis, along_axis, format_axis, parse_axis

SEEDS = [0, 1, 2]


def planted(value, scores, matches, chance=0.1, learned=True):
    """A compare.json at one axis value: each model's per-seed scores and litmus verdict."""
    rows = [
        {"model": m, "values": v, "mean": sum(v) / 3, "stopped": ["budget"] * 3}
        for m, v in scores.items()
    ]
    litmus = {"tolerance": 0.02, "rows": []}
    if learned:
        litmus["rows"] = [
            {"model": m, "matches": verdict, "reading": f"{m} read at {value}"}
            for m, verdict in matches.items()
        ]
    else:
        litmus["no_reference"] = ["standard did not learn"]
    return {
        "task": "retrieval",
        "metric": "test_accuracy",
        "higher_is_better": True,
        "seeds": SEEDS,
        "chance": chance,
        "rows": rows,
        "litmus": litmus,
    }


# mixit breaks at 8, frozen-qk holds, random is inconclusive at 16.
PLANTED = {
    4: planted(
        4,
        {"standard": [1.0] * 3, "frozen-qk": [1.0] * 3, "mixit": [1.0] * 3, "random": [1.0] * 3},
        {"frozen-qk": True, "mixit": True, "random": True},
    ),
    8: planted(
        8,
        {"standard": [1.0] * 3, "frozen-qk": [1.0] * 3, "mixit": [0.4] * 3, "random": [1.0] * 3},
        {"frozen-qk": True, "mixit": False, "random": True},
    ),
    16: planted(
        16,
        {"standard": [1.0] * 3, "frozen-qk": [1.0] * 3, "mixit": [0.1] * 3, "random": [0.9] * 3},
        {"frozen-qk": True, "mixit": False, "random": None},
    ),
}


def run_planted(tmp_path, plants, values):
    asked = []

    def compare_point(folder, overrides):
        asked.append(overrides["task.max_pairs"])
        return plants[overrides["task.max_pairs"]]

    return along_axis(Axis("task.max_pairs", values), tmp_path, {}, compare_point), asked


def test_break_points_of_a_model_that_breaks_one_that_holds_and_one_inconclusive(tmp_path):
    result, asked = run_planted(tmp_path, PLANTED, (4, 8, 16))
    assert asked == [4, 8, 16] and result["stopped_at"] is None
    points = {b["model"]: (b["outcome"], b["at"]) for b in result["break_points"]}
    assert points == {
        "frozen-qk": ("holds", None),
        "mixit": ("breaks", 8),
        "random": ("inconclusive", 16),
    }
    scores = {s["model"]: s for s in result["scores"]}
    assert scores["frozen-qk"]["relative"] == pytest.approx(1.0)
    # mixit: (1 + (0.4 - 0.1) / 0.9 + 0) / 3 on every seed
    assert scores["mixit"]["relative"] == pytest.approx((1 + 0.3 / 0.9) / 3)
    assert scores["mixit"]["spread"] == pytest.approx(0.0)
    text = format_axis(result)
    assert "breaks at 8" in text and "inconclusive at 16" in text and "holds over the axis" in text
    # Each model's reading at every value, with why where it is not a match.
    assert re.search(r"^  frozen-qk +4: matches, 8: matches, 16: matches$", text, re.M)
    assert re.search(r"^  mixit +4: matches, 8: falls short \(.+\), 16: ", text, re.M)


def test_the_reference_not_learning_stops_the_axis(tmp_path):
    plants = dict(PLANTED)
    plants[8] = planted(
        8, {m: [0.1] * 3 for m in ("standard", "frozen-qk", "mixit", "random")}, {}, learned=False
    )
    result, asked = run_planted(tmp_path, plants, (4, 8, 16))
    assert asked == [4, 8]  # nothing beyond it trains
    assert result["stopped_at"] == 8
    assert {b["outcome"] for b in result["break_points"]} == {"holds"}
    text = format_axis(result)
    assert "did not learn at task.max_pairs=8" in text and "holds up to 4" in text


def test_no_value_with_a_reference_gives_no_reading(tmp_path):
    plants = {4: planted(4, {"standard": [0.1] * 3, "mixit": [0.1] * 3}, {}, learned=False)}
    result, _ = run_planted(tmp_path, plants, (4, 8))
    assert [b["outcome"] for b in result["break_points"]] == ["unread"]
    assert math.isnan(result["scores"][0]["relative"]) and "no reading" in format_axis(result)


def test_it_writes_one_csv_row_per_run_a_json_and_a_figure(tmp_path):
    result, _ = run_planted(tmp_path, PLANTED, (4, 8, 16))
    rows = list(csv.DictReader((tmp_path / "axis.csv").open()))
    assert len(rows) == 3 * 4 * 3  # values x models x seeds
    assert {r["value"] for r in rows} == {"4", "8", "16"}
    assert (
        json.loads((tmp_path / "axis.json").read_text())["break_points"] == result["break_points"]
    )
    assert (tmp_path / "axis.png").stat().st_size > 5_000 and (tmp_path / "axis.pdf").is_file()


def test_parse_axis_reads_values_and_the_tasks_default():
    assert parse_axis("task.max_pairs=4,8", "retrieval", "tiny", {}) == Axis(
        "task.max_pairs", ("4", "8")
    )
    # Retrieval names its own: Figure 2's pair counts; others walk 0.5-4x the preset's value.
    assert parse_axis("default", "retrieval", "tiny", {}) == Axis("task.max_pairs", (3, 4, 8))
    default = parse_axis("default", "addition", "tiny", {})
    assert default.key == "task.num_digits" and len(default.values) >= 3
    # Values the task refuses fail before training; auto stops doubling short of them.
    with pytest.raises(UsageError, match=r"task\.num_pairs=32"):
        parse_axis("task.num_pairs=8,32", "mqar", "tiny", {})
    assert parse_axis("auto", "mqar", "tiny", {}).values == (8, 16)
    for bad in ("task.max_pairs=4", "task.max_pairs=4,4", "pairs"):
        with pytest.raises(UsageError):
            parse_axis(bad, "retrieval", "tiny", {})
    with pytest.raises(UsageError):
        parse_axis("default", "memorization", "tiny", {})  # no knob of its own


def test_an_override_of_the_axis_key_runs_when_it_is_one_of_the_values():
    axis = Axis("task.max_pairs", ("4", "8"))
    assert parse_axis("task.max_pairs=4,8", "retrieval", "tiny", {"task.max_pairs": 4}) == axis
    assert parse_axis("task.max_pairs=4,8", "retrieval", "tiny", {"task.max_pairs": "8"}) == axis
    with pytest.raises(UsageError, match="disagree"):
        parse_axis("task.max_pairs=4,8", "retrieval", "tiny", {"task.max_pairs": 5})


def test_a_default_axis_leaves_out_the_small_values_whose_examples_cannot_be_drawn():
    # At 12 parentheses too few distinct strings exist for the preset's test set unseen in
    # training: a refusal of the data, which resolving the config alone does not show.
    default = parse_axis("default", "dyck", "tiny", {})
    assert default.values == (24, 48, 96)
    assert default.left_out[0].startswith("task.length=12: could not draw 2000 test examples")
    with pytest.raises(UsageError, match=r"--axis task\.length=12: could not draw"):
        parse_axis("task.length=12,24", "dyck", "tiny", {})  # values the user names fail
    reading = {"key": "task.length", "points": [], "stopped_at": None, "break_points": []}
    printed = format_axis({**reading, "scores": [], "left_out": list(default.left_out)})
    assert "left out, the task refuses it: task.length=12: could not draw" in printed


def test_an_axis_value_stays_beside_its_option():
    argv = ["compare", "--axis", "task.max_pairs=4,8", "train.steps=5", "--seeds", "2"]
    assert overrides_last(argv) == [
        "compare",
        "--axis",
        "task.max_pairs=4,8",
        "--seeds",
        "2",
        "train.steps=5",
    ]


def test_compare_along_an_axis_end_to_end(tmp_path, capsys):
    out = tmp_path / "axis"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--axis"]
    argv += ["task.max_pairs=2,4", "train.steps=4", "train.eval_every=4", "task.n_train=256"]
    argv += ["task.n_test=64", "train.batch_size=16", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    shown = capsys.readouterr()
    # Which value trains, its table as soon as it is read, then each model's reading at every
    # value with its reason (#104).
    assert "mixit: task.max_pairs=2, value 1 of 2" in shown.err
    assert "task.max_pairs=2:\ntask: retrieval (preset tiny" in shown.out
    assert shown.out.index("task.max_pairs=2:") < shown.out.index("axis task.max_pairs")
    assert re.search(
        r"^  mixit +(2: [a-z]|no value read: the reference learned at none$)", shown.out, re.M
    )
    assert (out / "task.max_pairs=2" / "compare.json").is_file()
    # Priced value by value in the folders the axis gave them: the first value's runs are
    # trained, so none is left to price there (the second trained only if the reference
    # learned at the first, so its count is the axis's business, and its seconds the load's).
    assert main([*argv[:-3], "--estimate", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    first, second = text.split("task: retrieval at task.max_pairs=4 (preset tiny)")
    assert "task: retrieval at task.max_pairs=2 (preset tiny)" in first
    assert re.search(r"^standard +0 ", first, re.M) and re.search(r"^mixit +0 ", first, re.M)
    assert "axis task.max_pairs: 2 values, about " in second
    assert "at the first value where the reference does not learn" in text
    fresh = tmp_path / "fresh"
    assert main([*argv[:-3], "--estimate", "--out", str(fresh)]) == 0
    assert not fresh.exists()


def test_axis_auto_doubles_until_a_model_that_matched_falls_short(tmp_path):
    axis = parse_axis("auto", "retrieval", "tiny", {"task.vocab_size": 512})
    assert axis.values == (8, 16, 32, 64, 128) and axis.until_separated
    # At tiny's 64 tokens the keys (the upper half) run out beyond 32 pairs.
    assert parse_axis("auto", "retrieval", "tiny", {}).values == (8, 16, 32)
    everyone = {"frozen-qk": True, "mixit": True, "random": True}
    scores = {m: [1.0] * 3 for m in ("standard", "frozen-qk", "mixit", "random")}
    plants = {8: planted(8, scores, everyone), 16: planted(16, scores, everyone)}
    plants[32] = planted(32, scores, {**everyone, "random": False})  # the weakest parts here
    asked = []

    def compare_point(folder, overrides):
        asked.append(overrides["task.max_pairs"])
        return plants[overrides["task.max_pairs"]]

    result = along_axis(axis, tmp_path, {}, compare_point)
    assert asked == [8, 16, 32] and result["separated_at"] == 32
    text = format_axis(result)
    assert "the models separate at task.max_pairs=32" in text
    # Doubling stopped at 32: the models that held were tried that far, not over an axis.
    assert "holds up to 32" in text and "holds over the axis" not in text


def test_axis_auto_states_its_bound_when_nothing_separates(tmp_path):
    axis = Axis("task.max_pairs", (8, 16), until_separated=True)
    scores = {m: [1.0] * 3 for m in ("standard", "mixit")}
    plant = planted(8, scores, {"mixit": True})
    result = along_axis(axis, tmp_path, {}, lambda folder, overrides: plant)
    assert result["separated_at"] is None
    assert "no separation up to task.max_pairs=16" in format_axis(result)


def test_mixits_length_limit_is_one_line_before_anything_trains(tmp_path, capsys):
    """#105: a length past a set model.block_size is refused at the value that outgrows it,
    saying why MixiT cannot run there, before the first value trains."""
    out = tmp_path / "axis"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--out", str(out)]
    assert main([*argv, "--axis", "task.max_pairs=4,32", "model.block_size=20"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--axis task.max_pairs=32: sequences of length" in err
    assert "MixiT's T x T mixing matrices" in err and not out.exists()
