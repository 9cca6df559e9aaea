"""`mixit sweep`: an Optuna grid study whose points train as any command's runs do, each
recorded once, a diverging one as a failed trial, and whose best configuration is printed
for reuse."""

import collections
import json

import optuna
import pytest
from optuna.trial import TrialState

from mixit.cli import main
from mixit.common.errors import TrainingDiverged, UsageError
from mixit.running import runs
from mixit.running.launchers import Launch
from mixit.tuning import sweep as sweeping

FAST = {
    "task.num_digits": 2,
    "task.n_train": 500,
    "task.n_test": 100,
    "train.eval_every": 1000,
}


def grid_file(tmp_path, lrs=(0.001, 0.003)):
    path = tmp_path / "grid.yaml"
    path.write_text(f"model.n_embd: [16, 32]\ntrain.lr: [{', '.join(map(str, lrs))}]\n")
    return str(path)


def trials(out, state=TrialState.COMPLETE):
    study = optuna.load_study(study_name="addition-mixit-tiny", storage=f"sqlite:///{out}/study.db")
    return [t for t in study.get_trials() if t.state == state]


def points(found):
    return collections.Counter(json.dumps(t.params, sort_keys=True) for t in found)


@pytest.mark.processes
def test_two_jobs_cover_the_grid_exactly_once_and_a_rerun_adds_nothing(tmp_path):
    out = tmp_path / "sweep"
    overrides = {**FAST, "train.steps": 5}
    kwargs = dict(preset="tiny", grid=grid_file(tmp_path), out=out, overrides=overrides)
    rows = sweeping.sweep("addition", "mixit", launch=Launch(jobs=2), **kwargs)
    assert len(rows) == 4
    done = trials(out)
    assert len(points(done)) == 4 and set(points(done).values()) == {1}
    assert {t.user_attrs["run_dir"] for t in done} == {
        str(p.parent) for p in (out / "runs").glob("*/summary.json")
    }
    sweeping.sweep("addition", "mixit", **kwargs)
    assert len(trials(out)) == 4


def test_a_diverging_point_is_a_failed_trial_and_the_others_finish(tmp_path, monkeypatch):
    """A grid point that diverges does not stop the sweep (its neighbours at a smaller rate
    still train), is recorded once as a failed trial, and is not trained again."""
    trained = []

    def train_run(config, run_dir, *args, **kwargs):
        trained.append(config.train.lr)
        if config.train.lr > 0.002:
            raise TrainingDiverged("training diverged: loss is nan at step 3")
        return real_run(config, run_dir, *args, **kwargs)

    real_run = runs.train_run
    monkeypatch.setattr(runs, "train_run", train_run)
    out = tmp_path / "sweep"
    kwargs = dict(preset="tiny", grid=grid_file(tmp_path), out=out)
    rows = sweeping.sweep("addition", "mixit", overrides={**FAST, "train.steps": 3}, **kwargs)
    assert [row["params"]["train.lr"] for row in rows] == [0.001, 0.001]
    assert len(trials(out, TrialState.FAIL)) == 2 and len(trained) == 4
    sweeping.sweep("addition", "mixit", overrides={**FAST, "train.steps": 3}, **kwargs)
    assert len(trained) == 4 and len(trials(out, TrialState.FAIL)) == 2


def test_sweep_takes_the_other_commands_launch_options(tmp_path):
    grid = grid_file(tmp_path)
    base = ["sweep", "--task", "addition", "--model", "mixit", "--grid", grid]
    assert main([*base, "--no-wait"]) == 2  # local: nothing to wait for
    assert main([*base, "--launcher", "nowhere"]) == 2


def test_best_prints_a_train_command_and_writes_best_json(tmp_path, capsys):
    out = tmp_path / "sweep"
    sweeping.sweep(
        "addition", "mixit", "tiny", grid_file(tmp_path), out, overrides={**FAST, "train.steps": 3}
    )
    assert main(["sweep", "--best", "--out", str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("mixit train --task addition --model mixit --preset tiny model.n_embd=")
    best = json.loads((out / "best.json").read_text())
    assert best[0]["task"] == "addition" and set(best[0]["overrides"]) == {
        "model.n_embd",
        "train.lr",
    }


def test_table8_grid_and_bad_grids(tmp_path):
    assert len(sweeping.load_grid("retrieval", "table8")["train.batch_size"]) == 3
    with pytest.raises(UsageError, match="no grid for task 'custom'"):
        sweeping.load_grid("custom", "table8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("model.n_embd: 16\n")
    with pytest.raises(UsageError, match="mapping of dotted keys to value lists"):
        sweeping.load_grid("addition", str(bad))
    bad.write_text("1: [0.1]\ntrain.lr: [0.001]\n")  # a key YAML reads as an integer
    with pytest.raises(UsageError, match="mapping of dotted keys to value lists"):
        sweeping.load_grid("addition", str(bad))
    assert main(["sweep", "--task", "addition", "--model", "mixit", "--grid", "nope.yaml"]) == 2
