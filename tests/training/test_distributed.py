"""Data parallelism: 2 gloo processes on CPU train exactly like 1 at the same global batch."""

import json
import os
import subprocess
import sys

import pytest

from mixit.cli import main

OVERRIDES = [
    "task.seq_len=12",
    "task.n_train=2000",
    "task.n_test=200",
    "model.n_embd=32",
    "model.n_layer=1",
    "train.steps=20",
    "train.eval_every=10",
    "train.batch_size=64",
]


def metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").open()]


@pytest.mark.processes
def test_two_processes_equal_one(tmp_path, cpu_only):
    """Each of the two processes also splits its half of the batch in two micro-batches: the
    step is still the one-process, whole-batch step. The task is compression, whose readout
    never uses its body's output head (DDP is told so): one launch checks both."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    base = ["train", "--task", "compression", "--model", "mixit", *OVERRIDES]
    mixit = [sys.executable, "-m", "mixit"]
    assert main([*base, "--out", str(tmp_path / "one"), "--no-progress"]) == 0  # in-process
    two = [*mixit, *base, "train.micro_batches=2", "--nproc", "2", "--out", str(tmp_path / "two")]
    subprocess.run(two, check=True, env=env, timeout=240)
    one, two = metrics(tmp_path / "one"), metrics(tmp_path / "two")
    assert [r["step"] for r in one] == [r["step"] for r in two] == [10, 20]
    for a, b in zip(one, two, strict=True):
        assert abs(a["train_loss"] - b["train_loss"]) < 1e-5
        assert abs(a["test_loss"] - b["test_loss"]) < 1e-5
