"""Checkpoints: exact resume after SIGKILL, atomic writes, refusal of untrustworthy files."""

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from mixit.cli import main
from mixit.training.checkpoint import CHECKPOINT, PREVIOUS, latest_checkpoint
from mixit.training.train import train

ARGS = ["--task", "addition", "--model", "standard", "--preset", "tiny"]
OVERRIDES = [
    "task.num_digits=2",
    "task.n_train=2000",
    "task.n_test=200",
    "model.n_embd=32",
    "model.n_layer=1",
    "train.steps=240",
    "train.eval_every=40",
    "train.plateau=0",
    "train.checkpoint_every=10",
]


def cli(out, *extra):
    return [sys.executable, "-m", "mixit", "train", *ARGS, "--out", str(out), *extra, *OVERRIDES]


def checkpoint_step(out):
    folder = latest_checkpoint(out)
    if folder is None:
        return 0
    try:
        state = torch.load(folder / "state.pt", weights_only=True)
    except Exception:
        return 0  # caught between the two files of a swap
    return json.loads(state["progress"])["step"]


@contextlib.contextmanager
def one_thread():
    """In-process runs at the killed subprocess's one thread, so that their sums are added in
    the same order and metrics compare exactly (starting a process costs seconds)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def train_in_process(out, *extra):
    with one_thread():
        assert main(["train", *ARGS, "--out", str(out), *extra, *OVERRIDES, "--no-progress"]) == 0


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    train_in_process(out)
    return json.loads((out / "summary.json").read_text())


def _env():
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def kill_at(out, step, *extra):
    """Train in a process of its own, killed (SIGKILL) once its checkpoint reaches ``step``."""
    process = subprocess.Popen(cli(out, *extra), env=_env(), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while checkpoint_step(out) < step and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.processes
def test_sigkill_then_resume_gives_identical_metrics(uninterrupted, tmp_path):
    """Killed at two random points, the second time while resuming, then resumed to the end:
    the uninterrupted run's metrics, each evaluation once."""
    out = tmp_path / "run"
    first, second = sorted(random.Random(0).sample(range(20, 200), 2))
    kill_at(out, first)
    kill_at(out, second, "--resume")
    assert not (out / "summary.json").exists() or checkpoint_step(out) == 240
    train_in_process(out, "--resume")
    resumed = json.loads((out / "summary.json").read_text())
    assert resumed["metrics"] == uninterrupted["metrics"]
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").open()]
    assert steps == sorted(set(steps)) and steps[-1] == 240  # no duplicated evaluations


def overrides():
    return dict(item.split("=") for item in OVERRIDES)


def test_a_kill_while_writing_a_checkpoint_leaves_a_complete_one(tmp_path, monkeypatch):
    out = tmp_path / "run"
    partial = {**overrides(), "train.steps": "20"}
    train("addition", "standard", out=out, overrides=partial, progress=False)
    whole = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()
    # A kill between the two renames of a swap: only checkpoint.old is complete.
    (out / CHECKPOINT).rename(out / PREVIOUS)
    (out / f".{CHECKPOINT}.123.tmp").mkdir()  # and a half-written new one
    assert latest_checkpoint(out) == out / PREVIOUS
    resumed = train("addition", "standard", out=out, overrides=partial, resume=True)
    assert resumed["metrics"] == whole["metrics"]


def test_resume_of_a_finished_run_trains_nothing(tmp_path):
    out = tmp_path / "run"
    short = {**overrides(), "train.steps": "10"}
    first = train("addition", "standard", out=out, overrides=short, progress=False)
    assert train("addition", "standard", out=out, overrides=short, resume=True) == first


class RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def _damage(kind, out, tmp_path):
    weights = out / CHECKPOINT / "model.safetensors"
    if kind == "truncated":
        weights.write_bytes(weights.read_bytes()[:100])
    elif kind == "pickle":
        torch.save({"evil": RunsCode()}, out / CHECKPOINT / "state.pt")
    else:  # weights of another shape or another variant
        other = {"shape": ["model.n_embd=64"], "variant": []}[kind]
        model = "mixit" if kind == "variant" else "standard"
        alien = tmp_path / "alien"
        short = {**overrides(), "train.steps": "10", **dict(o.split("=") for o in other)}
        train("addition", model, out=alien, overrides=short, progress=False)
        weights.write_bytes((alien / CHECKPOINT / "model.safetensors").read_bytes())


@pytest.mark.parametrize("kind", ["truncated", "shape", "variant", "pickle"])
def test_bad_checkpoints_are_refused(kind, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    short = {**overrides(), "train.steps": "10"}
    train("addition", "standard", out=out, overrides=short, progress=False)
    (out / "summary.json").unlink()
    _damage(kind, out, tmp_path)
    argv = ["train", *ARGS, "--out", str(out), "--resume", *OVERRIDES[:-3], "train.steps=10"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mixit: error:" in err
    assert not (out / "summary.json").exists() and not (tmp_path / "pwned.txt").exists()


@pytest.mark.parametrize("damage", ["not json", "not a run config"])
def test_a_damaged_config_json_is_refused_with_one_line(damage, tmp_path, capsys):
    out = tmp_path / "run"
    train("addition", "standard", out=out, overrides={**overrides(), "train.steps": "2"})
    text = {"not json": "{task_name: addition", "not a run config": '{"model": {}}'}[damage]
    (out / "config.json").write_text(text)
    assert main(["analyze", "attention", str(out), "--out", str(tmp_path / "maps")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("mixit: error:") and "config.json" in err
