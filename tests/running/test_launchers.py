"""Runs as a submitit job array, through submitit's local executor: the cluster path without
a cluster (``--launcher submitit-local``)."""

import json

import pytest

from mixit.cli import main
from mixit.running import launchers
from mixit.running.launchers import JOBS_FILE, parse_options
from mixit.tuning import rules
from mixit.tuning.rules import validation_points

pytest.importorskip("submitit")
QUICK = ["train.steps=4", "train.eval_every=4", "train.eval_examples=256"]


@pytest.fixture(autouse=True)
def _quick_polls(monkeypatch):
    """A cluster's queue is polled every few seconds; these jobs end within seconds."""
    monkeypatch.setattr(launchers, "POLL_SECONDS", 0.2)


def jobs(out):
    return json.loads((out / "slurm" / JOBS_FILE).read_text())


@pytest.mark.processes
def test_reproduce_table4_through_a_job_array_submits_each_run_once(tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["reproduce", "table4", "--seeds", "1", "--out", str(out), *QUICK]
    assert main([*argv, "--launcher", "submitit-local", "--no-wait"]) == 0
    submitted = jobs(out)
    assert len(submitted) == 4  # memorization, four models
    # Waiting collects them: nothing in flight is submitted again.
    assert main([*argv, "--launcher", "submitit-local"]) == 0
    assert jobs(out) == submitted
    assert "0 runs submitted" in capsys.readouterr().err
    report = (out / "table4" / "report.md").read_text()
    assert "Not reported yet" not in report and report.startswith("# Table 4")
    assert len(list((out / "runs").glob("*/summary.json"))) == 4
    # Finished runs are read back as any finished run: neither submitted nor trained again.
    assert main([*argv, "--launcher", "submitit-local"]) == 0
    assert jobs(out) == submitted


@pytest.mark.processes
def test_a_run_that_fails_on_its_node_is_named_with_its_log(tmp_path, capsys):
    out = tmp_path / "c"
    argv = ["compare", "--task", "addition", "--models", "standard", "--out", str(out)]
    diverging = ["train.lr=1e30", "train.steps=4", "train.eval_every=4"]
    assert main([*argv, "--launcher", "submitit-local", *diverging]) == 1
    err = capsys.readouterr().err
    (job,) = jobs(out).values()
    assert f"(job {job['job_id']}) ended without a summary; its log: " in err
    assert str(out / "slurm" / f"{job['job_id']}_0_log.err") in err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--launcher", "pbs"], "--launcher 'pbs' is not one of: local, slurm, submitit-local"),
        (["--no-wait"], "--no-wait and --slurm-option need --launcher slurm or submitit-local"),
        (["--launcher", "slurm", "--slurm-option", "partition"], "is not KEY=VALUE"),
        (["--gpus-per-run", "0"], "argument --gpus-per-run: must be >= 1, got 0"),
        (["--launcher", "slurm", "--gpus-per-run", "2"], "trains with local torchrun groups"),
        (["--gpus-per-run", "3"], "train.batch_size=128 is not divisible by the 3 processes"),
    ],
)
def test_bad_launch_options_exit_2_before_anything_is_written(extra, message, tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["compare", "--task", "addition", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_slurm_options_keep_numbers_as_numbers():
    options = parse_options(["slurm_partition=gpu", "gpus_per_node=1", "timeout_min=90.5"])
    assert options == {"slurm_partition": "gpu", "gpus_per_node": 1, "timeout_min": 90.5}


@pytest.mark.processes
def test_tuning_through_a_job_array_chooses_as_tuning_here(tmp_path, monkeypatch):
    """Each rung's runs are submitted; the halted ones are read back from their checkpoints'
    evaluations, so the halving sees the same scores as the local pool's."""
    monkeypatch.setattr(rules, "GRID", (0, 1))  # two rates halve as three do, in fewer jobs
    quick = ["train.steps=4", "train.eval_every=2", "train.eval_examples=64", "task.n_train=300"]
    quick += ["task.n_test=64", "model.n_embd=16", "model.n_head=2", "model.n_layer=1"]
    argv = ["compare", "--task", "retrieval", "--models", "standard", "--tune", "lr", *quick]
    assert main([*argv, "--out", str(tmp_path / "here")]) == 0
    assert main([*argv, "--out", str(tmp_path / "array"), "--launcher", "submitit-local"]) == 0
    here, array = (
        json.loads((tmp_path / d / "tuning.json").read_text()) for d in ("here", "array")
    )
    assert array["standard"]["overrides"] == here["standard"]["overrides"]
    assert [(p.lr, p.steps) for p in validation_points(array["standard"])] == [
        (p.lr, p.steps) for p in validation_points(here["standard"])
    ]  # the same rates, each trained as far
    assert len(jobs(tmp_path / "array")) >= len(here["standard"]["validation"])


def test_tuning_refuses_not_to_wait(tmp_path, capsys):
    argv = ["compare", "--task", "retrieval", "--models", "standard", "--tune", "lr"]
    argv += ["--launcher", "submitit-local", "--no-wait", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "drop --no-wait" in capsys.readouterr().err
    assert not (tmp_path / "o" / "slurm").exists()


@pytest.mark.parametrize("settings", [{"jobs": 0}, {"jobs": -2}, {"gpus_per_run": 0}])
def test_a_launch_of_no_processes_is_refused_in_the_api_too(settings):
    from mixit.common.errors import UsageError
    from mixit.running.launchers import Launch

    with pytest.raises(UsageError, match="must be a whole number >= 1"):
        Launch(**settings)
