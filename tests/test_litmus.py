"""End to end: the spectrum separates a task that needs an induction circuit (retrieval)."""

import math
import statistics

import pytest

from mixit import compare
from mixit.compare import format_table
from mixit.litmus import litmus, reading, reference_problems

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
    result = {"metric": metric, "higher_is_better": metric == "test_accuracy", "rows": rows}
    readings = {r["model"]: r for r in litmus(result, 0.02)}
    assert sorted(readings) == ["frozen-qk", "mixit", "random"]
    assert readings["frozen-qk"]["matches"] and readings["random"]["matches"]
    assert not readings["mixit"]["matches"]
    assert readings["mixit"]["difference"] == pytest.approx(0.5 * worse)
    assert readings["frozen-qk"]["reading"] == "learned queries and keys are not needed"
    assert litmus({**result, "rows": rows[1:]}, 0.02) == []  # no standard, no reading
    table = {"task": "t", "preset": "tiny", "metric": metric, "rows": []}
    shown = format_table({**table, "litmus": {"tolerance": 0.02, "rows": list(readings.values())}})
    assert "mixit" in shown and "falls short" in shown and "at most 0.02 worse" in shown


def _result(metric="test_accuracy", chance=0.25, **values):
    rows = [{"model": m, "mean": sum(v) / len(v), "values": v} for m, v in values.items()]
    seeds = list(range(len(values["standard"])))
    higher_is_better = metric == "test_accuracy"
    return {"metric": metric, "higher_is_better": higher_is_better, "seeds": seeds,
            "chance": chance, "rows": rows}  # fmt: skip


def test_verdicts_use_every_seed_and_give_the_interval():
    result = _result(
        standard=[0.90, 0.91, 0.92],
        **{"frozen-qk": [0.90, 0.90, 0.91], "mixit": [0.50, 0.92, 0.50], "random": [0.3] * 3},
    )
    assert reference_problems(result, 0.02) == []
    readings = {r["model"]: r for r in litmus(result, 0.02)}
    assert readings["frozen-qk"]["matches"] is True
    assert readings["random"]["matches"] is False
    assert readings["mixit"]["matches"] is None  # one seed matches, two fall short
    low, high = readings["frozen-qk"]["interval"]  # paired differences 0, -0.01, -0.01
    half = 4.303 * statistics.stdev([0.0, -0.01, -0.01]) / math.sqrt(3)
    assert (low, high) == pytest.approx((-0.02 / 3 - half, -0.02 / 3 + half))
    shown = format_table(
        {"task": "t", "preset": "tiny", **result, "rows": [], "litmus": reading(result, 0.02, 100)}
    )
    assert "unsure" in shown and f"[{low:+.3f}, {high:+.3f}]" in shown and "chance" in shown


@pytest.mark.parametrize(
    "standard, others, problem",
    [
        ([0.30, 0.31], {}, "not clearly beyond chance"),  # the retrieval seed without a circuit
        ([1.00, 0.32], {}, "seeds disagree: standard deviation 0.481"),
        ([0.80, 0.80], {"frozen-qk": [0.90, 0.90]}, "frozen-qk beats standard by 0.100"),
    ],
)
def test_a_reference_that_did_not_learn_gives_no_verdict(standard, others, problem):
    result = _result(standard=standard, mixit=[0.29, 0.29], **others)
    given = reading(result, 0.02, steps=1200)
    assert given["rows"] == [] and any(problem in p for p in given["no_reference"])
    assert given["next"].startswith("train.steps=2400")


def test_more_seeds_of_the_same_spread_do_not_refuse_the_reference():
    """Ten seeds span a wider range than three of the same spread: the standard deviation,
    not the range, decides whether the reference's seeds disagree."""
    ten = [0.735, 0.742, 0.751, 0.723, 0.738, 0.745, 0.729, 0.733, 0.748, 0.741]  # range 0.028
    result = _result(standard=ten, mixit=[v - 0.01 for v in ten])
    assert reference_problems(result, 0.02) == []
    result = _result(standard=[0.70, 0.76, 0.70, 0.76], mixit=[0.7] * 4)  # deviation 0.035
    assert "seeds disagree" in reference_problems(result, 0.02)[0]


def test_log_perplexity_must_fall_clearly_below_its_unigram_chance():
    result = _result(metric="log_ppl", chance=6.0, standard=[5.9, 5.9], mixit=[5.95, 5.95])
    assert "not clearly beyond chance" in reference_problems(result, 0.05)[0]
    result = _result(metric="log_ppl", chance=6.0, standard=[4.0, 4.01], mixit=[4.02, 4.03])
    assert reference_problems(result, 0.05) == []


def test_compare_gives_no_verdict_when_the_reference_did_not_learn(tmp_path):
    untrained = RETRIEVAL | {"train.steps": 5, "train.eval_every": 5}
    result = compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=untrained)
    # A guess among the context's values: between 1/4 (four pairs) and H(4)/4 (m ~ U{1..4}).
    assert 1 / 4 < result["chance"] < (1 + 1 / 2 + 1 / 3 + 1 / 4) / 4
    assert result["litmus"]["rows"] == [] and result["litmus"]["next"].startswith("train.steps=10")
    shown = format_table(result)
    assert "no verdict" in shown and "try next: train.steps=10" in shown
