"""`suite --axis`: every task along its own axis, on planted comparisons and one short run."""

import csv
import json

from test_axis import PLANTED

from mixit.cli import main
from mixit.study.axis import Axis
from mixit.study.suite_axis import axes_markdown, axis_tasks, suite_along_axes

AXES = {"retrieval": Axis("task.max_pairs", (4, 8, 16)), "khop": Axis("task.max_hops", (4, 8))}


def test_each_task_walks_its_own_axis_and_the_suite_reads_them_together(tmp_path):
    asked = []

    def compare_task(task, folder, overrides):
        key = AXES[task].key
        asked.append((task, overrides[key], folder.name))
        return PLANTED[overrides[key]]

    results = suite_along_axes(AXES, tmp_path, {}, compare_task)
    assert asked == [
        ("retrieval", 4, "task.max_pairs=4"),
        ("retrieval", 8, "task.max_pairs=8"),
        ("retrieval", 16, "task.max_pairs=16"),
        ("khop", 4, "task.max_hops=4"),
        ("khop", 8, "task.max_hops=8"),
    ]
    stored = json.loads((tmp_path / "suite.json").read_text())["axes"]
    outcomes = {t: {b["model"]: b["outcome"] for b in a["break_points"]} for t, a in stored.items()}
    assert outcomes["retrieval"] == {
        "frozen-qk": "holds",
        "mixit": "breaks",
        "random": "inconclusive",
    }
    assert outcomes["khop"] == {"frozen-qk": "holds", "mixit": "breaks", "random": "holds"}
    rows = list(csv.DictReader((tmp_path / "axis.csv").open()))
    assert len(rows) == (3 + 2) * 4 * 3  # the tasks' values x models x seeds
    assert {r["task"] for r in rows} == {"retrieval", "khop"}
    summary = (tmp_path / "summary.md").read_text()
    assert "## khop" in summary and "breaks at 8" in summary
    assert (tmp_path / "heatmap.png").stat().st_size > 5_000
    # Read again from the tasks' axis.json, training nothing: the same files.
    again = suite_along_axes(AXES, tmp_path, {}, None, report_only=True)
    assert again.keys() == results.keys()
    assert (tmp_path / "summary.md").read_text() == summary


def test_suite_along_an_axis_end_to_end(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["suite", "--tasks", "retrieval", "--models", "standard,mixit", "--axis"]
    argv += ["task.max_pairs=2,4", "train.steps=4", "train.eval_every=4", "task.n_train=256"]
    argv += ["task.n_test=64", "train.batch_size=16", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    assert "# Suite along each task's axis" in capsys.readouterr().out
    # Four steps teach the reference nothing: the axis stops at its first value.
    assert (out / "retrieval" / "task.max_pairs=2" / "compare.json").is_file()
    assert not (out / "retrieval" / "task.max_pairs=4").exists()
    assert (out / "retrieval" / "axis.json").is_file() and (out / "axis.csv").is_file()
    capsys.readouterr()
    assert main([*argv, "--estimate", "--target", "cpu"]) == 0  # each value priced
    assert "suite: 1 tasks along their axes, 2 values, about " in capsys.readouterr().out
    assert main(["suite", "--tasks", "retrieval", "--axis", "task.max_pairs=4,64"]) == 2


def test_the_default_suite_along_default_axes_leaves_out_the_tasks_without_a_knob():
    walked, left = axis_tasks("default", None)
    assert "memorization" in left and "memorization" not in walked
    assert "retrieval" in walked and "retrieval" not in left
    assert axis_tasks("task.max_pairs=2,4", ["retrieval"]) == (["retrieval"], [])
    assert axis_tasks("default", ["memorization"]) == (["memorization"], [])  # named: it fails
    text = axes_markdown({}, [], left)
    assert f"Left out, no knob of their own: {', '.join(left)}" in text
