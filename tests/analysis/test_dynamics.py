"""``train.track_heads`` and ``mixit analyze dynamics``: head scores at every evaluation, and when
each head crossed the threshold beside when the metric was learned (#105 item 3)."""

import json

import pytest
import torch

from mixit.analysis.dynamics import halfway, read_dynamics
from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.models.heads import TRACKED_ROWS, tracked_scores
from mixit.tasks import get_task
from mixit.training.resolve import resolve_config
from mixit.training.rundir import load_run, read_records
from mixit.training.train import train

SMALL = {"model.n_layer": 2, "model.n_embd": 16, "model.n_head": 2, "task.n_test": 96}
SMALL |= {"task.n_train": 256, "train.steps": 8, "train.eval_every": 4, "train.tensorboard": False}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One run trained with its heads tracked, one without (the same config otherwise)."""
    folder = tmp_path_factory.mktemp("dynamics")
    for name, tracked in (("plain", False), ("tracked", True)):
        settings = SMALL | {"train.track_heads": tracked}
        train("retrieval", "standard", out=folder / name, overrides=settings, progress=False)
    return folder / "plain", folder / "tracked"


def test_tracked_head_scores_equal_the_scores_computed_afterwards_from_the_same_weights(runs):
    run_dir = runs[1]
    last = read_records(run_dir / "metrics.jsonl")[-1]
    model, config = load_run(run_dir)
    inputs = get_task("retrieval").make_data(config.task, config.seed).test.inputs
    afterwards = tracked_scores(model, inputs)
    assert len(afterwards) == 2 * 2 * 2  # two kinds, two layers, two heads
    for key, value in afterwards.items():
        assert last[key] == pytest.approx(value, abs=1e-6), key
    assert inputs.shape[0] > TRACKED_ROWS  # scored on the first rows, not the whole split


def test_tracking_changes_nothing_the_run_computes(runs):
    plain, tracked = runs
    first, second = (read_records(p / "metrics.jsonl")[-1] for p in (plain, tracked))
    assert first["test_loss"] == second["test_loss"]
    one, two = (load_run(p)[0].state_dict() for p in (plain, tracked))
    assert all(torch.equal(one[k], two[k]) for k in one)


def test_analyze_dynamics_draws_the_tracked_scores_and_says_when_each_head_crossed(
    runs, tmp_path, capsys
):
    run_dir = runs[1]
    assert main(["analyze", "dynamics", str(run_dir), "--out", str(tmp_path)]) == 0
    found = json.loads((tmp_path / "dynamics.json").read_text())
    assert found["steps"] == [4, 8] and len(found["series"]) == 8
    assert (tmp_path / "dynamics.png").stat().st_size > 10_000
    assert "halfway from its first value to its best at" in capsys.readouterr().out
    dynamics = read_dynamics(run_dir, load_run(run_dir)[1])
    for series in dynamics.series:  # the first step at the threshold, or none
        at = [s for s, v in zip(dynamics.steps, series.values, strict=True) if v >= 0.5]
        assert series.crossed_at == (at[0] if at else None)


def test_an_untracked_run_says_how_to_track_it_and_an_arch_model_cannot(tmp_path, capsys):
    run_dir = tmp_path / "plain"
    train(
        "retrieval", "standard", out=run_dir, overrides=SMALL | {"train.steps": 4}, progress=False
    )
    assert main(["analyze", "dynamics", str(run_dir)]) == 2
    assert "train.track_heads=true" in capsys.readouterr().err
    with pytest.raises(UsageError, match=r"train\.track_heads reads mixit's decoder"):
        resolve_config(
            "retrieval", "standard", "tiny", 0, {"model.arch": "hf:gpt2", "train.track_heads": True}
        )


def test_the_metric_is_learned_halfway_from_its_first_value_to_its_best_not_at_a_first_rise():
    """A run that first rises to chance (0.05 -> 0.25) and learns the task later (0.9) is
    read at its later rise; log perplexity falls."""
    steps = [100, 200, 300, 400, 500]
    assert halfway(steps, [0.05, 0.25, 0.27, 0.6, 0.9], higher_is_better=True) == 400
    assert halfway(steps, [5.0, 4.0, 2.0, 1.9, 1.9], higher_is_better=False) == 300
    assert halfway(steps, [0.3, 0.3, 0.2, 0.1, 0.3], higher_is_better=True) is None
