"""The command line: the public contract, bad input as one line with exit status 2."""

import json
import subprocess
import sys

import pytest

from mixit.cli import main

MICRO = [
    "task.vocab_size=16",
    "task.max_pairs=3",
    "task.n_train=256",
    "task.n_test=64",
    "model.n_embd=32",
    "model.n_layer=1",
    "train.steps=5",
    "train.eval_every=5",
    "train.batch_size=16",
]

BAD_INPUTS = {
    "unknown task": ["train", "--task", "sorting", "--model", "standard"],
    "unknown model": ["train", "--task", "retrieval", "--model", "mamba"],
    "unknown preset": ["train", "--task", "retrieval", "--model", "mixit", "--preset", "huge"],
    "unknown key": ["train", "--task", "retrieval", "--model", "mixit", "model.n_layers=2"],
    "unknown section": ["train", "--task", "retrieval", "--model", "mixit", "optim.lr=1"],
    "wrong type": ["train", "--task", "retrieval", "--model", "mixit", "train.steps=many"],
    "not key=value": ["train", "--task", "retrieval", "--model", "mixit", "steps"],
    "heads do not divide width": [
        "train",
        "--task",
        "retrieval",
        "--model",
        "mixit",
        "model.n_embd=30",
        "model.n_head=4",
    ],
    "sequence longer than MixiT's matrices": [
        "train",
        "--task",
        "retrieval",
        "--model",
        "mixit",
        "model.block_size=8",
    ],
    "bad device": ["train", "--task", "retrieval", "--model", "mixit", "train.device=gpu0"],
    "bad choice": ["train", "--task", "retrieval", "--model", "mixit", "model.init=xavier"],
    "missing --model": ["train", "--task", "retrieval"],
    "bad seed": ["train", "--task", "retrieval", "--model", "mixit", "--seed", "x"],
    "unknown model in compare": ["compare", "--task", "retrieval", "--models", "standard,gpt"],
    "negative tolerance": ["compare", "--task", "retrieval", "--tolerance", "-0.1"],
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_and_no_summary(case, tmp_path, capsys):
    out = tmp_path / "run"
    code = main([*BAD_INPUTS[case], "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("mixit") and "Traceback" not in err
    assert not (out / "summary.json").exists()
    assert not list(tmp_path.rglob("summary.json"))


def test_unknown_key_lists_the_valid_keys(capsys):
    main(["train", "--task", "retrieval", "--model", "mixit", "train.stepz=3"])
    err = capsys.readouterr().err
    assert "train.stepz" in err and "steps" in err and "batch_size" in err


@pytest.mark.processes
def test_console_script_exit_status_and_help(capsys):
    bad = subprocess.run(
        [sys.executable, "-m", "mixit", "train", "--task", "nope", "--model", "mixit"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert (
        bad.stderr.strip().splitlines() == [bad.stderr.strip()]
        and "unknown task 'nope'" in bad.stderr
    )
    assert "Traceback" not in bad.stderr
    with pytest.raises(SystemExit) as shown:  # in-process: starting Python costs seconds
        main(["train", "--help"])
    assert shown.value.code == 0
    out = capsys.readouterr().out
    assert "retrieval" in out and "frozen-qk" in out


def test_train_writes_the_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["train", "--task", "retrieval", "--model", "mixit", "--out", str(out), *MICRO]) == 0
    )
    assert json.loads((out / "summary.json").read_text())["model"] == "mixit"
    assert "test_accuracy" in capsys.readouterr().out


def test_compare_prints_a_table_writes_json_and_reuses_runs(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--seeds", "2"]
    assert main([*args, "--out", str(out), *MICRO]) == 0
    table = capsys.readouterr().out
    assert "standard" in table and "mixit" in table and "±" in table
    result = json.loads((out / "compare.json").read_text())
    assert result["task"] == "retrieval" and result["metric"] == "test_accuracy"
    assert result["seeds"] == [0, 1] and result["overrides"]["train.steps"] == "5"
    assert "(preset tiny, task.vocab_size=16" in table
    assert [row["model"] for row in result["rows"]] == ["standard", "mixit"]
    assert all(len(row["values"]) == 2 for row in result["rows"])
    summaries = sorted((out / "runs").glob("*/summary.json"))
    assert len(summaries) == 4  # two models, two seeds
    stamps = [summary.stat().st_mtime_ns for summary in summaries]
    assert main([*args, "--out", str(out), *MICRO]) == 0
    assert [summary.stat().st_mtime_ns for summary in summaries] == stamps


def test_estimate_trains_and_writes_no_run_and_counts_finished_runs_free(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--task", "retrieval", "--model", "mixit", "--estimate", *MICRO]) == 0
    shown = capsys.readouterr().out
    assert "nothing was trained" in shown.splitlines()[0] and row(shown, "mixit")[:2] == ["1", "5"]
    assert not (tmp_path / "runs").exists()
    compare = ["compare", "--task", "retrieval", "--out", "cmp", *MICRO]
    both = [*compare, "--models", "standard,mixit", "--seeds", "2", "--estimate"]
    assert main(both) == 0
    shown = capsys.readouterr().out
    assert row(shown, "standard")[0] == row(shown, "mixit")[0] == "2"  # runs to train
    assert not (tmp_path / "cmp").exists()
    assert main([*compare, "--models", "mixit"]) == 0  # mixit's seed 0 is now finished
    capsys.readouterr()
    assert main(both) == 0
    shown = capsys.readouterr().out
    assert row(shown, "standard")[0] == "2" and row(shown, "mixit")[0] == "1"


@pytest.mark.processes
def test_compare_jobs_trains_in_parallel_processes_into_the_same_runs(tmp_path, capsys):
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--seeds", "2"]
    argv += ["--out", str(tmp_path / "cmp"), *MICRO]
    assert main([*argv, "--jobs", "2", "--estimate"]) == 0
    printed = capsys.readouterr().out.splitlines()  # a shared machine adds a line of its own
    assert any("with 2 runs at once" in line for line in printed[-2:])
    assert main([*argv, "--jobs", "2"]) == 0
    summaries = sorted((tmp_path / "cmp" / "runs").glob("*/summary.json"))
    assert len(summaries) == 4
    stamps = [summary.stat().st_mtime_ns for summary in summaries]
    assert main(argv) == 0  # one job: the same configs, the same run directories, reused
    assert [summary.stat().st_mtime_ns for summary in summaries] == stamps


def row(table: str, model: str) -> list[str]:
    """The cells after the model's name in its row of a printed table."""
    (cells,) = [line.split()[1:] for line in table.splitlines() if line.split()[:1] == [model]]
    return cells


@pytest.mark.parametrize("command", ["train", "compare"])
def test_an_output_folder_that_cannot_be_made_exits_2_with_one_line(command, tmp_path, capsys):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    task = ["--task", "retrieval", "--model" if command == "train" else "--models", "mixit"]
    code = main([command, *task, "--out", str(in_the_way / "run"), *MICRO])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith("mixit: error: cannot create the folder") and str(in_the_way) in err
