"""Rule 5's "still rising" on planted metric curves (docs/tuning.md): the gain over the last
half of the budget, over at least three evaluations, and never at the metric's ceiling or
within the tolerance of the run's target."""

import json

import pytest

from mixit.study.judge import read_at_best
from mixit.training.resolve import resolve_config
from mixit.tuning.rules import best_held_out, rising_at_end, summary_at_best


def _run(tmp_path, curve, steps=1000, stop_at=None):
    """A run of ``steps`` whose test accuracy at each evaluation is ``curve`` (evenly spaced)."""
    settings = {"train.steps": steps, "train.eval_every": steps // len(curve)}
    config = resolve_config("retrieval", "standard", "tiny", 0, settings)
    config = config.with_train(stop_at=stop_at)
    every = steps // len(curve)
    lines = [{"step": every * (i + 1), "test_accuracy": v} for i, v in enumerate(curve)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return config


@pytest.mark.parametrize(
    "curve, rising",
    [
        ([0.3, 0.5, 0.7, 0.9], True),  # still climbing over the last half
        ([0.3, 0.5, 0.9, 1.0], False),  # at the ceiling: converged, whatever it gained
        ([0.3, 0.5, 0.97, 0.99], False),  # within the tolerance of the ceiling
        ([0.3, 0.8, 0.80, 0.81], False),  # flat over the last half
        ([0.25, 0.25, 0.25, 0.25], False),  # flat at chance: converged
        ([0.2, 0.3, 0.4, 0.60, 0.60, 0.60, 0.61, 0.61], False),  # from step 500 on: +0.01
        ([0.2, 0.3, 0.4, 0.60, 0.60, 0.62, 0.64, 0.66], True),  # from step 500 on: +0.06
    ],
)
def test_still_rising_reads_the_last_half_and_sees_the_ceiling(tmp_path, curve, rising):
    config = _run(tmp_path, curve)
    assert rising_at_end(tmp_path, config, "budget") is rising


def test_a_run_within_the_tolerance_of_its_target_is_not_rising(tmp_path):
    config = _run(tmp_path, [0.3, 0.5, 0.7, 0.89], stop_at=0.9)
    assert rising_at_end(tmp_path, config, "budget") is False
    config = _run(tmp_path, [0.3, 0.5, 0.7, 0.85], stop_at=0.9)
    assert rising_at_end(tmp_path, config, "budget") is True


def test_a_run_stopped_by_its_rule_is_not_rising(tmp_path):
    config = _run(tmp_path, [0.3, 0.5, 0.7, 0.9])
    assert rising_at_end(tmp_path, config, "target") is False
    assert rising_at_end(tmp_path, config, "plateau") is False


def test_a_half_with_fewer_than_three_evaluations_reads_the_last_three(tmp_path):
    # Evaluations at 250, 500, 750, 1000: the half holds 500-1000 (three); at 500, 1000 of a
    # two-evaluation run the gain is read over the two it has.
    config = _run(tmp_path, [0.1, 0.5, 0.51, 0.51])
    assert rising_at_end(tmp_path, config, "budget") is False  # 0.50 -> 0.51 only
    config = _run(tmp_path, [0.1, 0.5])
    assert rising_at_end(tmp_path, config, "budget") is True


def test_a_run_that_peaks_early_is_read_at_its_best_held_out_point(tmp_path):
    """GPT-2's fuzzy recall reference scored 0.972 at 2,400 steps and 0.923 at 9,600: read at
    the evaluation where its held-out stop split was best, not at its last."""
    config = _run(tmp_path, [0.5, 0.9, 0.8, 0.7])
    lines = [
        {"step": 250, "test_accuracy": 0.50, "stop_validation": 0.52},
        {"step": 500, "test_accuracy": 0.97, "stop_validation": 0.95},
        {"step": 750, "test_accuracy": 0.95, "stop_validation": 0.95},  # equal: the first
        {"step": 1000, "test_accuracy": 0.92, "stop_validation": 0.90},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert best_held_out(tmp_path, config) == (0.97, 500)
    row = {"model": "standard", "values": [0.92], "mean": 0.92, "std": 0.0, "steps_run": [1000]}
    read_at_best(row, [(tmp_path, config)])
    assert row["values"] == [0.97] and row["read_at"] == [500] and row["mean"] == 0.97


def test_a_run_without_a_held_out_split_keeps_its_last_evaluation(tmp_path):
    config = _run(tmp_path, [0.5, 0.9])
    assert best_held_out(tmp_path, config) is None
    row = {"model": "standard", "values": [0.9], "mean": 0.9, "std": 0.0, "steps_run": [1000]}
    read_at_best(row, [(tmp_path, config)])
    assert row == {"model": "standard", "values": [0.9], "mean": 0.9, "std": 0.0,
                   "steps_run": [1000]}  # fmt: skip


def test_a_summary_is_read_at_its_best_held_out_point_whole(tmp_path):
    config = _run(tmp_path, [0.5, 0.9])
    lines = [
        {"step": 500, "test_accuracy": 0.97, "test_loss": 0.1, "stop_validation": 0.95},
        {"step": 1000, "test_accuracy": 0.92, "test_loss": 0.3, "stop_validation": 0.90},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    last = {"metrics": {"test_accuracy": 0.92, "test_loss": 0.3}, "run_dir": str(tmp_path)}
    read = summary_at_best(last, config)
    assert read["metrics"] == {"test_accuracy": 0.97, "test_loss": 0.1} and read["read_at"] == 500
    assert last["metrics"]["test_accuracy"] == 0.92  # the summary itself keeps its last
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1000, "test_accuracy": 0.9}))
    assert summary_at_best(last, config) == last
