"""`compare --tune lr`: each model's learning rate chosen on held-out training data, never on
the test split, and every seed trained at it."""

import json
from collections import Counter

import pytest
import torch

from mixit import compare
from mixit.compare import LR_FACTORS
from mixit.tasks.base import Split, TaskData, hold_out_validation
from mixit.train import get_task, resolve_config

QUICK = {
    "task.vocab_size": 16,
    "task.max_pairs": 3,
    "task.n_train": 300,
    "task.n_test": 64,
    "model.n_embd": 16,
    "model.n_head": 2,
    "model.n_layer": 1,
    "train.steps": 4,
    "train.eval_every": 4,
    "train.eval_examples": 64,
}


def test_the_validation_split_comes_from_the_training_rows_only():
    config = resolve_config("retrieval", "standard", "tiny", 0, QUICK)
    data = get_task("retrieval").make_data(config.task, 0)
    held = hold_out_validation(data, 0.1)
    rows = lambda split: Counter(tuple(r) for r in split.inputs.tolist())  # noqa: E731
    assert len(held.test) == 30 and len(held.train) == 270
    assert rows(held.test) + rows(held.train) == rows(data.train)  # a partition of its rows
    assert not rows(held.test) & rows(data.test)
    memorization = TaskData(Split(torch.ones(4, 3), torch.ones(4, 3)), None, 8, True)
    assert hold_out_validation(memorization, 0.1) is memorization  # scored on its training set


def test_compare_tunes_each_models_learning_rate_and_trains_its_seeds_at_it(tmp_path):
    result = compare(
        "retrieval", ["standard", "mixit"], seeds=2, out=tmp_path, overrides=QUICK, tune=["lr"]
    )
    preset_lr = resolve_config("retrieval", "standard", "tiny", 0, QUICK).train.lr
    for model, tuned in result["tuned"].items():
        tried = [lr for lr, _ in tuned["validation"]]
        assert tried == pytest.approx([preset_lr * f for f in LR_FACTORS])
        best = max(tuned["validation"], key=lambda pair: pair[1])[0]
        assert tuned["train.lr"] == best
        for seed in (0, 1):
            run = tmp_path / model / f"seed{seed}"
            assert json.loads((run / "config.json").read_text())["train"]["lr"] == best
            assert json.loads((run / "summary.json").read_text())["evaluated_on"] == "test"
    for summary in (tmp_path / "tune").glob("*/*/summary.json"):
        assert json.loads(summary.read_text())["evaluated_on"] == "validation"
    assert len(list((tmp_path / "tune").glob("*/*/summary.json"))) == 2 * len(LR_FACTORS)
