"""``mixit suite``: the spectrum over tasks, its results.csv, heatmap and summary."""

import json
import shutil

import pytest

from mixit.cli import main
from mixit.study.results import COLUMNS, read_results_csv
from mixit.study.suite import relative_score, summary_markdown

QUICK = ["train.steps=4", "train.eval_every=4", "train.stop_at=none", "train.eval_examples=64"]
QUICK += ["task.n_train=500", "task.n_test=64", "train.batch_size=16"]  # both tasks have these keys


def test_suite_writes_one_row_per_run_a_heatmap_and_the_verdicts(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["suite", "--tasks", "noisy-recall,selective-copying", "--out", str(out)]
    assert main([*argv, "--models", "standard,mixit", "--seeds", "2", *QUICK]) == 0
    rows = read_results_csv(out / "results.csv")
    assert tuple(rows[0]) == COLUMNS and len(rows) == 2 * 2 * 2  # tasks x models x seeds
    assert {(r["task"], r["model"], r["seed"]) for r in rows} == {
        (t, m, s)
        for t in ("noisy-recall", "selective-copying")
        for m in ("standard", "mixit")
        for s in ("0", "1")
    }
    assert (out / "heatmap.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text()
    assert "**noisy-recall**" in summary and "**selective-copying**" in summary
    assert summary in capsys.readouterr().out
    # compare writes the same rows for its own runs
    task_rows = read_results_csv(out / "noisy-recall" / "results.csv")
    assert task_rows == [r for r in rows if r["task"] == "noisy-recall"]
    # MAD's tasks carry MAD's class-averaged accuracy beside mixit's per-query one
    assert {r["peer_metric"] for r in rows} == {"test_macro_accuracy"}
    assert all(0.0 <= float(r["peer_value"]) <= 1.0 for r in rows)


@pytest.mark.parametrize(
    "mean, standard, chance, lower_better, score",
    [
        (0.625, 1.0, 0.25, False, 0.5),
        (0.25, 1.0, 0.25, False, 0.0),
        (1.0, 1.0, 0.25, False, 1.0),
        (5.0, 4.0, 6.0, True, 0.5),  # log perplexity: chance above, lower is better
        (0.5, 1.0, None, False, 0.5),
    ],
)
def test_a_score_runs_from_chance_to_the_standard_model(
    mean, standard, chance, lower_better, score
):
    assert relative_score(mean, standard, chance, lower_better) == pytest.approx(score)


def test_an_unknown_task_exits_2(tmp_path, capsys):
    assert main(["suite", "--tasks", "nope", "--out", str(tmp_path / "s")]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err


def test_suite_estimate_prices_every_task_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["suite", "--tasks", "retrieval,dyck", "--models", "standard,mixit", "--out", str(out)]
    assert main([*argv, "--estimate", "--target", "cpu", "--no-tune"]) == 0
    printed = capsys.readouterr().out
    assert "task: retrieval" in printed and "task: dyck" in printed
    assert printed.strip().splitlines()[-2].startswith("suite: 2 tasks, about ")
    assert "tuning" not in printed
    assert not out.exists()
    assert main([*argv, "--estimate", "--target", "cpu", "--tune", "lr"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("plus tuning (docs/tuning.md)") == 2
    assert "of tuning one run after another" in printed.strip().splitlines()[-2]
    assert printed.strip().splitlines()[-1].startswith("in all, ")  # retrieval stops at 0.99


def test_suite_estimate_along_each_tasks_axis_prices_every_value(tmp_path, capsys):
    out = tmp_path / "suite"
    argv = ["suite", "--tasks", "retrieval,dyck", "--models", "standard,mixit", "--out", str(out)]
    assert main([*argv, "--axis", "default", "--estimate", "--target", "cpu", "--no-tune"]) == 0
    printed = capsys.readouterr().out
    titles = [line for line in printed.splitlines() if line.startswith("task: ")]
    assert titles[0].startswith("task: retrieval at task.max_pairs=3 ")
    assert any(title.startswith("task: dyck at ") for title in titles)
    lines = printed.strip().splitlines()
    assert lines[-4].startswith(f"suite: 2 tasks along their axes, {len(titles)} values, about ")
    assert lines[-3].startswith("in all, ")  # retrieval stops at 0.99
    assert lines[-2].startswith("at the most: each task stops at the first value where the ref")
    assert lines[-1].startswith("left out, the task refuses it: task.length=12: could not draw")
    assert not out.exists()


def test_report_writes_the_finished_tasks_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["suite", "--out", str(out), "--models", "standard,mixit", *QUICK]
    assert main([*argv, "--tasks", "selective-copying"]) == 0
    (out / "selective-copying" / "runs" / "just-started").mkdir()  # no metrics.jsonl yet
    trained = sorted(out.glob("*/runs/*/"))
    capsys.readouterr()
    assert main([*argv, "--tasks", "selective-copying,noisy-recall", "--report"]) == 0
    assert sorted(out.glob("*/runs/*/")) == trained  # nothing trained, noisy-recall untouched
    assert not (out / "noisy-recall").exists()
    assert {r["task"] for r in read_results_csv(out / "results.csv")} == {"selective-copying"}
    summary = (out / "summary.md").read_text()
    assert "Not finished (no compare.json yet): noisy-recall." in summary
    cost = next(line for line in summary.splitlines() if line.startswith("| selective-copying | 2"))
    summaries = [run / "summary.json" for run in trained if (run / "summary.json").is_file()]
    logged = sum(json.loads(path.read_text())["train_seconds"] for path in summaries)
    assert cost.endswith(f"| {logged:,.0f} | cpu |")


def test_report_names_each_device_its_runs_trained_on(tmp_path):
    out = tmp_path / "s"
    argv = ["suite", "--out", str(out), "--models", "standard,mixit", *QUICK]
    assert main([*argv, "--tasks", "selective-copying"]) == 0
    moved = next((out / "selective-copying" / "runs").glob("*/summary.json"))
    moved.write_text(json.dumps(json.loads(moved.read_text()) | {"device": "cuda:0"}))
    assert main([*argv, "--tasks", "selective-copying", "--report"]) == 0
    summary = (out / "summary.md").read_text()
    assert "| training seconds | devices |" in summary
    assert next(line for line in summary.splitlines() if line.startswith("| all |")).endswith(
        "| cpu, cuda:0 |"
    )


def test_report_judges_again_from_the_runs_and_refuses_without_them(tmp_path, capsys):
    """A compare.json judged under other rules is read again from its runs; a task whose run
    records are gone is refused, nothing written (they would read as finished)."""
    out = tmp_path / "s"
    argv = ["suite", "--out", str(out), "--models", "standard,mixit", *QUICK, "--tasks", "dyck"]
    assert main(argv) == 0
    path = out / "dyck" / "compare.json"
    judged = path.read_text()
    stale = json.loads(judged)
    stale["rows"][0]["rising"] = [not up for up in stale["rows"][0]["rising"]]
    stale["litmus"]["stale"] = "judged by other rules"
    path.write_text(json.dumps(stale))
    assert main([*argv, "--report"]) == 0
    assert json.loads(path.read_text()) == json.loads(judged)
    shutil.rmtree(next((out / "dyck" / "runs").iterdir()))
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main([*argv, "--report"]) == 2
    error = capsys.readouterr().err.strip()
    assert "lacks the records of 1 of its runs" in error and "\n" not in error
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_report_without_a_finished_task_exits_2(tmp_path, capsys):
    argv = ["suite", "--tasks", "dyck", "--out", str(tmp_path / "s"), "--report"]
    assert main(argv) == 2
    assert "no finished task in" in capsys.readouterr().err


def test_a_suite_refused_for_bad_input_leaves_no_folder(tmp_path):
    out = tmp_path / "s"
    argv = ["suite", "--tasks", "addition", "--out", str(out), "model.no_such_key=1"]
    assert main(argv) == 2
    assert not out.exists()


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("compare.json", "[]", "compare.json: the whole file: input should be a valid dict"),
        ("compare.json", '{"rows": [{"model": "standard"}]}', "compare.json: higher_is_better: "),
        ("compare.json", "{garbage", "is not a UTF-8 JSON file"),
        ("results.csv", "a,b\n1,2\n", "not a results.csv this version reads"),
    ],
)
def test_report_on_another_versions_output_changes_nothing(
    tmp_path, capsys, name, content, fragment
):
    out = tmp_path / "s"
    argv = ["suite", "--out", str(out), "--models", "standard", *QUICK, "--tasks", "dyck"]
    assert main(argv) == 0
    (out / "dyck" / name).write_text(content)
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    capsys.readouterr()
    assert main([*argv, "--report"]) == 2
    error = capsys.readouterr().err.strip()
    assert fragment in error and "\n" not in error
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


def test_summary_says_what_each_verdict_rests_on():
    rows = [
        {"model": "frozen-qk", "difference": -0.5, "matches": False, "logit_spread_at_init": 0.816},
        {"model": "mixit", "difference": -0.6, "matches": None, "why": "mixit was still rising"},
    ]
    rows[0]["trained"] = "3,600 steps, converged, initialisation small-output"
    result = {"rows": [], "litmus": {"tolerance": 0.02, "rows": rows}}
    cost = {"runs": 0, "train_seconds": 0.0, "devices": set()}
    text = summary_markdown({"addition": {}}, {"addition": result}, "tiny", 3, {"addition": cost})
    assert "frozen-qk falls short (-0.500), mixit inconclusive (-0.600)" in text
    assert "  - mixit inconclusive: mixit was still rising" in text
    assert "  - frozen-qk, trained: 3,600 steps, converged, initialisation small-output" in text
    assert "  - frozen-qk, frozen attention's logit spread at initialisation 0.816" in text
