"""`compare --tune lr`: each model's learning rate chosen on held-out training data, never on
the test split, and every seed trained at it."""

import json
from collections import Counter

import pytest
import torch

from mixit import compare
from mixit.compare import LR_FACTORS
from mixit.resolve import resolve_config
from mixit.tasks import get_task
from mixit.tasks.base import Split, TaskData, hold_out_validation

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
    runs = [  # every run's config and where it was scored, all in one folder
        json.loads((d / "config.json").read_text())
        | {"evaluated_on": json.loads((d / "summary.json").read_text())["evaluated_on"]}
        for d in (tmp_path / "runs").iterdir()
    ]
    for model, tuned in result["tuned"].items():
        tried = [lr for lr, _ in tuned["validation"]]
        assert tried == pytest.approx([preset_lr * f for f in LR_FACTORS])
        best = max(tuned["validation"], key=lambda pair: pair[1])[0]
        assert tuned["train.lr"] == best
        trained = [r for r in runs if r["variant"] == model and not held_out(r)]
        assert sorted(r["seed"] for r in trained) == [0, 1]
        assert all(r["train"]["lr"] == best and r["evaluated_on"] == "test" for r in trained)
    tuning = [r for r in runs if held_out(r)]
    assert len(tuning) == 2 * len(LR_FACTORS)
    assert all(r["evaluated_on"] == "validation" for r in tuning)


def held_out(run: dict) -> bool:
    return run["train"].get("validation_fraction", 0.0) > 0
