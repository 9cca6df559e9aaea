"""``mixit suite --beside EARLIER``: a suite's verdicts beside an earlier suite's."""

import json
import shutil

from mixit.cli import main
from mixit.study.beside import beside_rows, beside_section

QUICK = ["train.steps=4", "train.eval_every=4", "train.stop_at=none", "train.eval_examples=64"]
QUICK += ["task.n_train=500", "task.n_test=64", "train.batch_size=16"]


def _result(rows, tuned, no_reference=None):
    reading = {"tolerance": 0.02, "rows": [] if no_reference else rows}
    if no_reference:
        reading["no_reference"] = [no_reference]
    models = [{"model": "standard", "mean": 1.0}] + [
        {"model": row["model"], "mean": 1.0 + row["difference"]} for row in rows
    ]
    return {"rows": models, "tuned": tuned, "litmus": reading}


def _tuned(init, steps, lr):
    return {"init": init, "steps": steps, "train.lr": lr}


def test_each_variant_reads_then_and_now_with_what_moved_in_its_tuning():
    earlier = _result(
        [
            {"model": "frozen-qk", "difference": -0.918, "matches": False},
            {"model": "mixit", "difference": -0.005, "matches": True},
        ],
        {"frozen-qk": _tuned("own", 1800, 6.3e-4), "mixit": _tuned("own", 3600, 6.3e-4)},
    )
    now = _result(
        [
            {"model": "frozen-qk", "difference": -0.004, "matches": True},
            {
                "model": "mixit",
                "difference": -0.4,
                "matches": None,
                "why": "mixit reached the budget cap (3,600 steps) still rising",
            },
        ],
        {"frozen-qk": _tuned("small-output", 3600, 2e-3), "mixit": _tuned("own", 3600, 6.3e-4)},
    )
    rows = beside_rows({"addition": now, "dyck": now}, {"addition": earlier})
    assert [(row["task"], row["model"]) for row in rows] == [
        ("addition", "frozen-qk"),
        ("addition", "mixit"),
    ]  # dyck is not in the earlier suite: nothing to set beside it
    qk, mixit = rows
    assert (qk["earlier"], qk["now"]) == ("falls short (-0.918)", "matches (-0.004)")
    assert qk["moved"] == "init own → small-output; steps 1,800 → 3,600; lr 0.00063 → 0.002"
    assert (mixit["earlier"], mixit["now"]) == ("matches (-0.005)", "inconclusive (-0.400)")
    assert mixit["moved"] == "inconclusive: mixit reached the budget cap (3,600 steps) still rising"
    section = "\n".join(beside_section(rows, "results/old"))
    assert "## Beside `results/old`" in section and "(2 of 2 changed)" in section


def test_an_earlier_suite_without_a_reference_reads_no_reference():
    earlier = _result(
        [{"model": "random", "difference": -0.3, "matches": False}],
        {},
        no_reference="standard's seeds disagree",
    )
    now = _result([{"model": "random", "difference": -0.3, "matches": False}], {})
    (row,) = beside_rows({"khop": now}, {"khop": earlier})
    assert (row["earlier"], row["now"]) == ("no reference", "falls short (-0.300)")
    assert row["moved"] == ""


def test_suite_report_gives_the_earlier_verdicts_in_summary_and_suite_json(tmp_path, capsys):
    out, old = tmp_path / "s", tmp_path / "old"
    argv = ["suite", "--tasks", "dyck", "--models", "standard,mixit", "--seeds", "2", *QUICK]
    assert main([*argv, "--out", str(out)]) == 0
    shutil.copytree(out, old)
    capsys.readouterr()
    assert main([*argv, "--out", str(out), "--report", "--beside", str(old)]) == 0
    summary = (out / "summary.md").read_text()
    assert f"## Beside `{old}`" in summary and "(0 of 1 changed)" in summary
    (row,) = json.loads((out / "suite.json").read_text())["beside"]["rows"]
    assert row["task"] == "dyck" and row["model"] == "mixit" and row["earlier"] == row["now"]
    assert row["earlier"] in summary


def test_beside_a_folder_with_no_earlier_suite_exits_2_before_anything_trains(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["suite", "--tasks", "dyck", "--out", str(out), "--beside", str(tmp_path / "none")]
    assert main([*argv, *QUICK]) == 2
    error = capsys.readouterr().err.strip()
    assert "give --beside a folder an earlier `mixit suite` wrote" in error and "\n" not in error
    assert not out.exists()


def test_beside_does_not_go_with_an_axis(tmp_path, capsys):
    argv = ["suite", "--tasks", "dyck", "--out", str(tmp_path / "s"), "--axis", "default"]
    assert main([*argv, "--beside", str(tmp_path)]) == 2
    assert "does not go with --axis" in capsys.readouterr().err
