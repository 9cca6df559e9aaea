"""End to end: the spectrum separates a task that needs an induction circuit (retrieval)."""

import pytest

from mixit import compare
from mixit.compare import format_table, litmus

RETRIEVAL = {
    "task.vocab_size": 24,
    "task.max_pairs": 4,
    "task.n_train": 4000,
    "task.n_test": 500,
    "model.n_embd": 32,
    "model.n_head": 2,
    "model.n_layer": 2,
    "train.steps": 500,
    "train.eval_every": 500,
    "train.batch_size": 64,
    "train.lr": 3e-3,
    "train.eval_examples": 500,
}


def test_learned_attention_solves_retrieval_and_fixed_mixing_does_not(tmp_path):
    result = compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=RETRIEVAL)
    accuracy = {row["model"]: row["mean"] for row in result["rows"]}
    assert accuracy["standard"] > 0.9
    assert accuracy["mixit"] < accuracy["standard"] - 0.3
    (mixit,) = result["litmus"]["rows"]  # the end-to-end reading: retrieval needs a circuit
    assert not mixit["matches"] and "input-dependent attention is needed" in mixit["reading"]


@pytest.mark.parametrize("metric", ["test_accuracy", "log_ppl"])
def test_litmus_reads_each_variant_against_standard_in_the_metrics_direction(metric):
    worse = -1.0 if metric == "test_accuracy" else 1.0  # the sign of "worse than standard"
    means = {"standard": 3.0, "frozen-qk": 3.0 + 0.01 * worse, "mixit": 3.0 + 0.5 * worse}
    means["random"] = 3.0 - 0.2 * worse  # better than standard
    rows = [{"model": m, "mean": v} for m, v in means.items()]
    readings = {r["model"]: r for r in litmus({"metric": metric, "rows": rows}, 0.02)}
    assert sorted(readings) == ["frozen-qk", "mixit", "random"]
    assert readings["frozen-qk"]["matches"] and readings["random"]["matches"]
    assert not readings["mixit"]["matches"]
    assert readings["mixit"]["difference"] == pytest.approx(0.5 * worse)
    assert readings["frozen-qk"]["reading"] == "learned queries and keys are not needed"
    assert litmus({"metric": metric, "rows": rows[1:]}, 0.02) == []  # no standard, no reading
    table = {"task": "t", "preset": "tiny", "metric": metric, "rows": []}
    shown = format_table({**table, "litmus": {"tolerance": 0.02, "rows": list(readings.values())}})
    assert "mixit" in shown and "falls short" in shown and "at most 0.02 worse" in shown
