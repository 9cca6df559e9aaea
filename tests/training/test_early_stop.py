"""Stopping when solved: train.stop_at and train.patience end a run early, say why, read the
training rows held out for them and never the test split, and a resumed run stops at the same
step as an uninterrupted one."""

import importlib
import json
import shutil

import pytest

from mixit.common.errors import UsageError
from mixit.training.stopping import STOP_METRIC, StopRule
from mixit.training.train import train

OVERRIDES = {
    "task.num_digits": 2,
    "task.n_train": 2000,
    "task.n_test": 200,
    "model.n_embd": 32,
    "model.n_layer": 1,
    "train.steps": 240,
    "train.eval_every": 40,
}


def run(out, **extra):
    return train("addition", "standard", out=out, overrides=OVERRIDES | extra, progress=False)


# A stop rule that never fires in 240 steps, so that the run holds out the same rows as one
# whose rule does.
NEVER = {"train.patience": 1000}


@pytest.fixture(scope="module")
def trajectory(tmp_path_factory):
    """(step, accuracy on the stop rule's held-out rows) at each evaluation of the run that
    uses its whole budget."""
    out = tmp_path_factory.mktemp("whole") / "run"
    summary = run(out, **NEVER)
    assert summary["stopped"] == "budget" and summary["steps_run"] == 240
    records = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    return [(r["step"], r[STOP_METRIC]) for r in records]


def _a_target_reached_before_the_end(trajectory):
    """A value first reached at an evaluation before the last, and the step it is reached."""
    target = trajectory[len(trajectory) // 2][1]
    step = next(step for step, value in trajectory if value >= target)
    assert step < trajectory[-1][0], trajectory  # else this budget cannot show a stop
    return target, step


@pytest.fixture(scope="module")
def stopped(trajectory, tmp_path_factory):
    """(target, the step it is first reached, the summary and folder of a run stopping there)."""
    target, step = _a_target_reached_before_the_end(trajectory)
    out = tmp_path_factory.mktemp("stopped") / "run"
    return target, step, {**run(out, **{"train.stop_at": target}), "dir": out}


def test_a_run_that_reaches_its_target_stops_there_and_says_so(trajectory, stopped):
    _, step, summary = stopped
    assert (summary["stopped"], summary["steps_run"], summary["steps"]) == ("target", step, 240)
    assert summary["metrics"][STOP_METRIC] == dict(trajectory)[step]
    logged = [json.loads(line)["step"] for line in (summary["dir"] / "metrics.jsonl").open()]
    assert logged[-1] == step


def test_patience_stops_at_the_first_evaluation_without_a_better_metric(trajectory, tmp_path):
    values = [value for _, value in trajectory]
    first_stale = next(i for i in range(1, len(values)) if values[i] <= max(values[:i]))
    summary = run(tmp_path / "run", **{"train.patience": 1})
    assert summary["stopped"] == "plateau"
    assert summary["steps_run"] == trajectory[first_stale][0]


def test_early_stopping_never_reads_the_test_split(tmp_path, monkeypatch):
    # A planted signal: every model solves the test split, and only the test split.
    module = importlib.import_module("mixit.training.setup")
    real = module.evaluate_run

    def planted(model, data, config):
        metrics = real(model, data, config)
        return metrics if data.test_is_train else metrics | {"test_accuracy": 1.0}

    monkeypatch.setattr(module, "evaluate_run", planted)
    summary = run(tmp_path / "run", **{"train.stop_at": 0.999, "train.steps": 80})
    assert summary["metrics"]["test_accuracy"] == 1.0  # the signal was there to read
    assert summary["stopped"] == "budget" and summary["steps_run"] == 80
    assert summary["metrics"][STOP_METRIC] < 0.999


class Interrupted(Exception):
    pass


def test_a_resumed_run_stops_at_the_same_step(stopped, tmp_path, monkeypatch):
    target, step, whole = stopped  # checkpoints change no result: the same run uninterrupted
    settings = {"train.stop_at": target, "train.checkpoint_every": 10}
    module = importlib.import_module("mixit.training.setup")  # where a run saves its checkpoint
    real_save = module.save_checkpoint

    def save_then_die(out, *args):
        real_save(out, *args)
        if args[-1]["step"] == step - 30:
            raise Interrupted

    monkeypatch.setattr(module, "save_checkpoint", save_then_die)
    with pytest.raises(Interrupted):
        run(tmp_path / "cut", **settings)
    monkeypatch.undo()
    resumed = train(
        "addition",
        "standard",
        out=tmp_path / "cut",
        overrides=OVERRIDES | settings,
        resume=True,
        progress=False,
    )
    keys = ("steps_run", "stopped", "metrics")
    assert {k: resumed[k] for k in keys} == {k: whole[k] for k in keys}


def test_a_checkpoint_written_at_the_stop_resumes_to_the_stop(stopped, tmp_path):
    target, step, first = stopped
    out = tmp_path / "run"
    shutil.copytree(first["dir"], out)
    (out / "summary.json").unlink()  # killed between the last checkpoint and the summary
    again = train(
        "addition",
        "standard",
        out=out,
        overrides=OVERRIDES | {"train.stop_at": target},
        resume=True,
        progress=False,
    )
    assert (again["steps_run"], again["stopped"]) == (step, "target")
    assert again["metrics"] == first["metrics"]


def test_lower_is_better_metrics_stop_below_the_target():
    rule = StopRule(target=2.0, patience=0, higher_is_better=False)
    assert [rule.update(v) for v in (3.0, 2.5, 1.9)] == [None, None, "target"]


@pytest.mark.parametrize("setting", ["train.patience=-1", "train.stop_at=nan"])
def test_bad_stop_settings_are_usage_errors(setting):
    key, value = setting.split("=")
    with pytest.raises(UsageError, match=key):
        train("addition", "standard", overrides=OVERRIDES | {key: value}, progress=False)
