"""`mixit sweep`: an Optuna grid study whose points train exactly once, even when a worker
is killed, and whose best configuration is printed for reuse."""

import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time

import optuna
import pytest
from optuna.trial import TrialState

from mixit import sweep as sweeping
from mixit.cli import main
from mixit.errors import UsageError

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


def completed_per_grid_point(out):
    study = optuna.load_study(study_name="addition-mixit-tiny", storage=f"sqlite:///{out}/study.db")
    done = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    return collections.Counter(t.system_attrs["grid_id"] for t in done), study


@pytest.mark.processes
def test_two_workers_cover_the_grid_exactly_once_and_a_rerun_adds_nothing(tmp_path):
    out = tmp_path / "sweep"
    overrides = {**FAST, "train.steps": 5}
    kwargs = dict(preset="tiny", grid=grid_file(tmp_path), out=out, overrides=overrides)
    rows = sweeping.sweep("addition", "mixit", workers=2, **kwargs)
    assert len(rows) == 4
    counts, study = completed_per_grid_point(out)
    assert counts == {0: 1, 1: 1, 2: 1, 3: 1}
    assert len(list((out / "runs").glob("*/summary.json"))) == 4
    before = len(study.get_trials())
    sweeping.sweep("addition", "mixit", workers=1, **kwargs)
    assert len(study.get_trials()) == before


@pytest.mark.processes
def test_a_killed_workers_trial_is_retried_not_lost_or_duplicated(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    grid = grid_file(tmp_path)
    slow = [f"{k}={v}" for k, v in FAST.items()] + ["train.steps=200"]
    command = [sys.executable, "-m", "mixit", "sweep", "--task", "addition", "--model", "mixit"]
    command += ["--preset", "tiny", "--grid", grid, "--out", str(out), *slow]
    worker = subprocess.Popen(command, env={**os.environ, "OMP_NUM_THREADS": "1"})
    storage = f"sqlite:///{out}/study.db"
    deadline = time.monotonic() + 120
    while True:  # kill it in the middle of a trial
        assert time.monotonic() < deadline and worker.poll() is None
        try:
            trials = optuna.load_study(study_name="addition-mixit-tiny", storage=storage).trials
        except Exception:
            trials = []
        if any(t.state == TrialState.RUNNING for t in trials):
            break
        time.sleep(0.1)
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    monkeypatch.setattr(sweeping, "GRACE_SECONDS", 3)
    overrides = dict(item.split("=") for item in slow)
    sweeping.sweep("addition", "mixit", "tiny", grid, out, overrides=overrides)
    counts, study = completed_per_grid_point(out)
    assert counts == {0: 1, 1: 1, 2: 1, 3: 1}
    assert any(t.state == TrialState.FAIL for t in study.get_trials())  # the killed one


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("stop", ["SIGKILL to the sweep", "Ctrl-C"])
def test_local_workers_end_with_the_sweep(stop, tmp_path, alive, children, session):
    out = tmp_path / "sweep"
    endless = [f"{k}={v}" for k, v in FAST.items()] + ["train.steps=1000000"]
    command = [sys.executable, "-m", "mixit", "sweep", "--task", "addition", "--model", "mixit"]
    command += ["--preset", "tiny", "--grid", grid_file(tmp_path), "--out", str(out)]
    command += ["--workers", "2", *endless]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    sweep = session(command, env=env)
    storage = f"sqlite:///{out}/study.db"
    deadline = time.monotonic() + 120
    while True:  # both workers are training
        assert time.monotonic() < deadline and sweep.poll() is None
        try:
            trials = optuna.load_study(study_name="addition-mixit-tiny", storage=storage).trials
        except Exception:
            trials = []
        if sum(t.state == TrialState.RUNNING for t in trials) == 2:
            break
        time.sleep(0.1)
    workers = children(sweep.pid)
    assert len(workers) >= 2
    if stop == "Ctrl-C":  # reaches the whole process group, as in a terminal
        os.killpg(sweep.pid, signal.SIGINT)
        assert sweep.wait(timeout=10) == 130
    else:
        sweep.send_signal(signal.SIGKILL)
        sweep.wait()
    deadline = time.monotonic() + 10
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, workers))


def test_a_trial_orphaned_before_its_first_heartbeat_is_retried(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    out.mkdir()
    grid = grid_file(tmp_path)
    spec = {
        "task": "addition",
        "model": "mixit",
        "preset": "tiny",
        "grid": sweeping.load_grid("addition", grid),
        "storage": f"sqlite:///{(out / 'study.db').resolve()}",
    }
    with pytest.warns(UserWarning, match="Heartbeat"):  # Optuna: heartbeats are for optimize()
        orphan = sweeping.open_study(spec).ask()  # running, holds a grid point, no heartbeat
    monkeypatch.setattr(sweeping, "GRACE_SECONDS", 2)
    overrides = {**FAST, "train.steps": 3}
    runner = threading.Thread(
        target=sweeping.sweep,
        args=("addition", "mixit", "tiny", grid, out),
        kwargs={"overrides": overrides},
        daemon=True,  # without the fix it waits for the orphan forever
    )
    runner.start()
    runner.join(timeout=120)
    assert not runner.is_alive()
    counts, study = completed_per_grid_point(out)
    assert counts == {0: 1, 1: 1, 2: 1, 3: 1}
    assert study.get_trials()[orphan.number].state == TrialState.FAIL


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


def test_a_grid_point_handed_to_two_workers_is_trained_by_the_earlier_trial_only():
    storage = optuna.storages.InMemoryStorage()
    sampler = optuna.samplers.GridSampler({"train.lr": [0.001, 0.003]}, seed=0)
    study = optuna.create_study(storage=storage, sampler=sampler)
    first, second = study.ask(), study.ask()
    grid_id = storage.get_trial(first._trial_id).system_attrs["grid_id"]
    storage.set_trial_system_attr(second._trial_id, "grid_id", grid_id)  # the race's outcome
    assert not sweeping._taken_by_an_earlier_trial(first)
    assert sweeping._taken_by_an_earlier_trial(second)
