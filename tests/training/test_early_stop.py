"""Stopping when solved: train.stop_at and train.patience end a run early, say why, read the
training rows held out for them and never the test split, and a resumed run stops at the same
step as an uninterrupted one."""

import importlib
import json
import math
import shutil

import pytest

from mixit.common.errors import UsageError
from mixit.study.pricing import earliest_stop
from mixit.tasks.base import PLATEAU, PLATEAU_KEY, TASKS
from mixit.training.resolve import resolve_config
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
    "train.plateau": 0,  # these read the other rules alone
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

    def planted(model, data, config, training_rows=True):
        metrics = real(model, data, config, training_rows)
        return metrics if data.test_is_train else metrics | {"test_accuracy": 1.0}

    monkeypatch.setattr(module, "evaluate_run", planted)
    summary = run(tmp_path / "run", **{"train.stop_at": 0.999, "train.steps": 80})
    assert summary["metrics"]["test_accuracy"] == 1.0  # the signal was there to read
    assert summary["stopped"] == "budget" and summary["steps_run"] == 80
    assert summary["metrics"][STOP_METRIC] < 0.999


class Interrupted(Exception):
    pass


def _cut_then_resumed(out, monkeypatch, settings, at_step):
    """The run of ``settings`` killed after its checkpoint at ``at_step``, then resumed."""
    settings = settings | {"train.checkpoint_every": 10}
    module = importlib.import_module("mixit.training.setup")  # where a run saves its checkpoint
    real_save = module.save_checkpoint

    def save_then_die(out, *args):
        real_save(out, *args)
        if args[-1]["step"] == at_step:
            raise Interrupted

    monkeypatch.setattr(module, "save_checkpoint", save_then_die)
    with pytest.raises(Interrupted):
        run(out, **settings)
    monkeypatch.undo()
    overrides = OVERRIDES | settings
    return train("addition", "standard", out=out, overrides=overrides, resume=True, progress=False)


RESUMED = ("steps_run", "stopped", "metrics")


def test_a_resumed_run_stops_at_the_same_step(stopped, tmp_path, monkeypatch):
    target, step, whole = stopped  # checkpoints change no result: the same run uninterrupted
    resumed = _cut_then_resumed(tmp_path / "cut", monkeypatch, {"train.stop_at": target}, step - 30)
    assert {k: resumed[k] for k in RESUMED} == {k: whole[k] for k in RESUMED}


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
    assert [rule.update(s, v) for s, v in enumerate((3.0, 2.5, 1.9))] == [None, None, "target"]


@pytest.mark.parametrize("setting", ["train.patience=-1", "train.stop_at=nan"])
def test_bad_stop_settings_are_usage_errors(setting):
    key, value = setting.split("=")
    with pytest.raises(UsageError, match=key):
        train("addition", "standard", overrides=OVERRIDES | {key: value}, progress=False)


# The plateau rule (train.plateau) on planted curves of held-out accuracy, one evaluation every
# 10 steps of a 100-step budget: a stretch of 50 steps, at least three evaluations.
def _plateau_stop(values, plateau=0.5, higher_is_better=True, margin=0.02):
    rule = StopRule(target=None, patience=0, higher_is_better=higher_is_better)
    rule.stretch, rule.margin = plateau * 100, margin
    for i, value in enumerate(values, start=1):
        if rule.update(10 * i, value):
            return 10 * i
    return None


def test_a_run_flat_at_chance_stops_once_a_stretch_has_gone_by():
    assert _plateau_stop([0.29] * 10) == 60  # 60 - 10 = 50 steps since its first evaluation


def test_a_run_flat_within_the_tolerance_stops_and_one_gaining_more_goes_on():
    wobble = [0.30, 0.31, 0.29, 0.315, 0.30, 0.31, 0.30, 0.31, 0.30, 0.31]
    assert _plateau_stop(wobble) == 60
    rising = [0.30 + 0.005 * i for i in range(10)]  # 0.025 over any 50 steps: still rising
    assert _plateau_stop(rising) is None


def test_a_run_at_its_ceiling_stops_and_a_late_riser_is_read_over_the_latest_stretch():
    assert _plateau_stop([0.5, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]) == 80
    late = [0.29, 0.29, 0.29, 0.29, 0.35, 0.45, 0.55, 0.60, 0.61, 0.61]
    assert _plateau_stop(late) is None  # 0.45 at step 60 -> 0.61: rising over the last 50


def test_a_plateau_of_a_loss_is_read_downwards_and_nothing_infinite_is_flat():
    assert _plateau_stop([3.0, 2.0, 1.5, 1.2, 1.0, 0.9, 0.8], higher_is_better=False) is None
    flat_loss = [2.0, 2.01, 1.99, 2.0, 2.0, 2.0, 2.0]
    assert _plateau_stop(flat_loss, higher_is_better=False, margin=0.05) == 60
    assert _plateau_stop([math.inf] * 10) is None


def test_no_plateau_rule_without_a_stretch():
    assert _plateau_stop([0.29] * 10, plateau=0.0) is None


STUCK = {"train.plateau": 0.5, "train.lr": 1e-9}  # a learning rate at which nothing moves


def test_a_run_that_learns_nothing_stops_on_its_plateau_where_the_estimate_says(tmp_path):
    summary = run(tmp_path / "run", **STUCK)
    # Evaluations at 40, 80, ...: 160 is the first a half-budget stretch (120) after 40.
    assert (summary["stopped"], summary["steps_run"], summary["steps"]) == ("plateau", 160, 240)
    config = resolve_config("addition", "standard", "tiny", 0, OVERRIDES | STUCK)
    assert earliest_stop(config.train) == 160


def test_a_plateau_resumed_from_a_checkpoint_stops_at_the_same_step(tmp_path, monkeypatch):
    whole = run(tmp_path / "whole", **STUCK)
    resumed = _cut_then_resumed(tmp_path / "cut", monkeypatch, STUCK, 130)  # 3 evaluations in
    assert {k: resumed[k] for k in RESUMED} == {k: whole[k] for k in RESUMED}


def test_every_preset_stops_on_a_plateau():
    for task, spec in TASKS.items():
        for preset in spec.presets:
            assert PLATEAU_KEY not in spec.presets[preset], (task, preset)
            if task != "custom":  # which needs its data named to resolve
                assert resolve_config(task, "mixit", preset, 0).train.plateau == PLATEAU, task


def test_a_task_too_small_to_hold_rows_out_trains_its_budget_and_says_so(tmp_path, capsys):
    # 100 training rows: 10 % is 10, fewer than the 20 a stop rule reads; the rule is off
    # rather than reading the test split or a handful of rows.
    small = {"task.n_train": 100, "task.n_test": 50} | STUCK
    summary = run(tmp_path / "run", **small)
    assert (summary["stopped"], summary["steps_run"]) == ("budget", 240)
    assert "fewer than 20 out for the stop rule" in capsys.readouterr().err
    assert STOP_METRIC not in summary["metrics"]
