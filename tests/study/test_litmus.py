"""End to end: the spectrum separates a task that needs an induction circuit (retrieval)."""

import math
import statistics

import pytest

from mixit import compare
from mixit.study.litmus import (
    CROSSES,
    DOES_NOT_DISCRIMINATE,
    STRADDLES,
    litmus,
    reading,
    reference_problems,
)
from mixit.study.results import read_results_csv
from mixit.study.table import format_table, litmus_lines

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
    # The end-to-end reading, on one seed: what was compared, no claim of a circuit.
    (mixit,) = result["litmus"]["rows"]
    assert not mixit["matches"] and mixit["reading"].startswith(
        "mixit falls short of the reference on 1 seed: too few to say which component"
    )


@pytest.mark.parametrize("metric", ["test_accuracy", "log_ppl"])
def test_litmus_reads_each_variant_against_standard_in_the_metrics_direction(metric):
    worse = -1.0 if metric == "test_accuracy" else 1.0  # the sign of "worse than standard"
    means = {"standard": 3.0, "frozen-qk": 3.0 + 0.01 * worse, "mixit": 3.0 + 0.5 * worse}
    means["random"] = 3.0 - 0.2 * worse  # better than standard
    rows = [{"model": m, "mean": v, "values": [v] * 3} for m, v in means.items()]
    result = {"metric": metric, "higher_is_better": metric == "test_accuracy", "rows": rows}
    result["tuned"] = {
        m: {"steps": 100, "edge": "interior", "train.lr": 1e-3} for m in means
    }  # tuned under the protocol
    readings = {r.model: r for r in litmus(result, 0.02)}
    assert sorted(readings) == ["frozen-qk", "mixit", "random"]
    assert readings["frozen-qk"].matches and readings["random"].matches
    assert not readings["mixit"].matches
    assert readings["mixit"].difference == pytest.approx(0.5 * worse)
    assert readings["frozen-qk"].reading == "learned queries and keys are not needed"
    # Untuned, three seeds say what was compared and what would carry the sentence (#104).
    (untuned,) = [r for r in litmus({**result, "tuned": {}}, 0.02) if r.model == "frozen-qk"]
    assert untuned.reading.startswith("frozen-qk reaches the reference on 3 seeds at the preset")
    assert untuned.reading.endswith("tune each model first (--tune lr)")
    assert litmus({**result, "rows": rows[1:]}, 0.02) == []  # no standard, no reading
    table = {"task": "t", "preset": "tiny", "metric": metric, "rows": []}
    shown = format_table(
        {**table, "litmus": {"tolerance": 0.02, "rows": [r.to_json() for r in readings.values()]}}
    )
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
        **{"frozen-mlp": [0.90, 0.91, 0.92], "frozen-qk": [0.90, 0.90, 0.91]},
        **{"mixit": [0.50, 0.92, 0.50], "random": [0.3] * 3},
    )
    assert reference_problems(result, 0.02) == []
    readings = {r.model: r for r in litmus(result, 0.02)}
    assert readings["frozen-mlp"].matches is True
    assert readings["random"].matches is False
    assert readings["mixit"].matches is None and readings["mixit"].why == STRADDLES
    # Every seed within the tolerance, but the interval crosses it: inconclusive, not matches.
    assert readings["frozen-qk"].matches is None and readings["frozen-qk"].why == CROSSES
    low, high = readings["frozen-qk"].interval  # paired differences 0, -0.01, -0.01
    half = 4.303 * statistics.stdev([0.0, -0.01, -0.01]) / math.sqrt(3)
    assert (low, high) == pytest.approx((-0.02 / 3 - half, -0.02 / 3 + half))
    assert low < -0.02 < high
    shown = format_table(
        {"task": "t", "preset": "tiny", **result, "rows": [], "litmus": reading(result, 0.02, 100)}
    )
    assert "inconclusive" in shown and f"[{low:+.3f}, {high:+.3f}]" in shown and "chance" in shown


def test_a_variant_capped_while_rising_is_inconclusive_never_short():
    result = _result(standard=[0.95, 0.96], mixit=[0.50, 0.52])
    assert litmus(result, 0.02)[0].matches is False
    capped = {"capped": True, "steps": 4000, "edge": "interior", "train.lr": 1e-3}
    result["tuned"] = {"mixit": capped, "standard": {"capped": False}}
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and "budget cap (4,000 steps) still rising" in mixit.why
    # A verdict seed still rising at its budget's end: the same.
    result["tuned"]["mixit"] = capped | {"capped": False}
    result["rows"][1]["rising"] = [False, True]
    assert "still rising at its budget's end (seed 1)" in litmus(result, 0.02)[0].why
    # Trained to the end, it falls short, and the reading says how it was trained.
    result["rows"][1]["rising"] = [False, False]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is False and "4,000 steps, converged" in mixit.trained
    # A reference cut off while rising leaves a match inconclusive (it may pull away)...
    result["tuned"]["standard"] = capped
    result["rows"][1]["values"] = [0.95, 0.96]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and "the reference reached the budget cap" in mixit.why
    assert "may pull away" in mixit.why


def test_a_capped_reference_at_the_ceiling_on_every_seed_does_not_block_a_match():
    # #101: a perfect score is not "still rising", whatever the tuning seed did on the way.
    result = _result(standard=[1.0, 1.0, 0.99], mixit=[1.0, 1.0, 1.0])
    capped = {"capped": True, "steps": 4000, "edge": "interior", "train.lr": 1e-3}
    result["tuned"] = {"mixit": {"capped": False}, "standard": capped}
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is True and not mixit.still_rising
    # Short of the ceiling by more than the tolerance: the cap blocks the match again.
    result["rows"][0]["values"] = [0.97, 0.97, 0.97]
    result["rows"][1]["values"] = [0.975, 0.975, 0.975]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and "the reference reached the budget cap" in mixit.why


def test_a_converged_variant_short_of_a_rising_reference_falls_short_and_says_so():
    """A flat variant at chance against a reference still rising: the gap can only widen."""
    result = _result(standard=[0.90, 0.91, 0.93], mixit=[0.25, 0.24, 0.26])
    result["rows"][0]["rising"] = [True, True, False]
    result["rows"][1]["rising"] = [False, False, False]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is False
    rising = "the reference was still rising at its budget's end (seed 0, 1)"
    assert mixit.reference_rising == rising
    assert mixit.to_json()["reference_rising"] == mixit.reference_rising
    shown = litmus_lines({**result, "litmus": {"tolerance": 0.02, "rows": [mixit.to_json()]}})
    assert any("so the gap can only widen" in line for line in shown)
    # The variant still rising on one seed: it may catch up, so no verdict.
    result["rows"][1]["rising"] = [False, True, False]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and "mixit was still rising" in mixit.why


def test_an_open_reading_names_every_reason_and_a_rise_makes_it_extendable():
    """#104: seeds on both sides, one of them still rising: both reasons, and more steps."""
    result = _result(standard=[1.0, 1.0, 1.0], mixit=[0.97, 1.0, 1.0])
    result["rows"][1]["rising"] = [True, False, False]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and mixit.still_rising
    assert mixit.why == f"{STRADDLES}; mixit was still rising at its budget's end (seed 0)"
    # Converged on every seed: the seeds alone leave it open, and no budget would decide it.
    result["rows"][1]["rising"] = [False, False, False]
    (mixit,) = litmus(result, 0.02)
    assert (mixit.matches, mixit.why, mixit.still_rising) == (None, STRADDLES, False)
    # The reference still rising instead: it may move the reading either way.
    result["rows"][0]["values"] = [0.95, 0.95, 0.95]
    result["rows"][0]["rising"] = [False, True, False]
    result["rows"][1]["values"] = [0.92, 0.95, 0.95]
    (mixit,) = litmus(result, 0.02)
    assert mixit.matches is None and mixit.still_rising
    assert mixit.why.startswith(f"{STRADDLES}; the reference was still rising")


def test_a_task_the_random_transformer_solves_does_not_discriminate():
    result = _result(standard=[1.0, 1.0], mixit=[1.0, 1.0], random=[1.0, 1.0]) | {
        "task": "retrieval"
    }
    given = reading(result, 0.02, 100)
    assert given["does_not_discriminate"].startswith("make it harder: more pairs (task.max_pairs)")
    assert all(row["reading"] == DOES_NOT_DISCRIMINATE for row in given["rows"])
    shown = format_table({"preset": "tiny", **result, "rows": [], "litmus": given})
    assert "fixed mixing suffices" not in shown and "does not tell the models apart" in shown
    assert "(stopped: how many of a model's seeds ended at each reason; budget: " in shown


def test_a_custom_task_is_told_only_of_the_knob_it_has():
    """A generated custom task's knob is its size; one from files has none: the advice never
    names task.vocab_size, which character tokens never read (#104)."""
    result = _result(standard=[1.0, 1.0], mixit=[1.0, 1.0], random=[1.0, 1.0]) | {"task": "custom"}
    from_files = reading(result, 0.02, 100)["does_not_discriminate"]
    assert from_files.startswith("its examples come from its files: write harder ones (longer")
    assert "--axis task.data_files=" in from_files and "vocab" not in from_files
    result["overrides"] = {"task.generator": "gen.py:examples"}
    generated = reading(result, 0.02, 100)["does_not_discriminate"]
    assert generated.startswith("make it harder: a larger task.size (the generator's knob)")
    assert "vocab" not in generated + from_files


def test_each_task_is_advised_only_of_the_knobs_it_declares():
    """The advice names a task's own knobs, each a key of its config that the command line
    takes; a task read from a corpus or files names none, and so no setting that changes
    nothing (#104: task.vocab_size was advised where it is only a tokenizer's size)."""
    from mixit.config.overrides import with_settings
    from mixit.tasks import TASKS
    from mixit.tasks.base import harder
    from mixit.training.resolve import resolve_config

    for name, spec in TASKS.items():
        if spec.harder_with:
            config = resolve_config(name, "standard", "tiny", 0)
        for key in spec.harder_with:
            with_settings(config, {key: getattr(config.task, key.removeprefix("task."))})
        advice = harder(name)
        assert all(f"({key})" in advice for key in spec.harder_with)
        assert advice.startswith("make it harder: ") == bool(spec.harder_with)
    for from_data in ("lm", "sentiment", "custom"):
        assert "vocab" not in harder(from_data) and "task." not in harder(from_data)


def test_log_perplexity_is_inconclusive_only_when_the_order_changed_over_the_last_doubling():
    result = _result(metric="log_ppl", chance=6.0, standard=[4.0, 4.0], mixit=[4.5, 4.5])
    budgets = {"standard": [(100, 5.0), (200, 4.5)], "mixit": [(100, 4.9), (200, 4.8)]}
    record = {"capped": True, "steps": 200, "edge": "interior", "train.lr": 1e-3}
    result["tuned"] = {
        m: record | {"budgets": [{"steps": s, "score": v} for s, v in b]}
        for m, b in budgets.items()
    }
    (mixit,) = litmus(result, 0.05)  # capped means nothing here: no ceiling
    assert mixit.matches is None and "order against the reference changed" in mixit.why
    result["tuned"]["mixit"]["budgets"][0]["score"] = 5.1  # behind at both budgets
    (mixit,) = litmus(result, 0.05)
    assert mixit.matches is False and "200 steps, every model's budget" in mixit.trained


def test_one_seed_prints_no_spread():
    result = _result(standard=[0.9], mixit=[0.5]) | {"task": "retrieval", "preset": "tiny"}
    result["rows"] = [r | {"std": 0.0, "params_trainable": 1, "train_seconds": 1.0}
                      for r in result["rows"]]  # fmt: skip
    shown = format_table(result | {"litmus": reading(result, 0.02, 100)})
    assert "± n/a" in shown and "± 0.0000" not in shown


@pytest.mark.parametrize(
    "standard, others, problem",
    [
        ([0.30, 0.31], {}, "not clearly beyond chance"),  # the retrieval seed without a circuit
        ([0.80, 0.80], {"frozen-qk": [0.90, 0.90]}, "frozen-qk beats standard by 0.100"),
    ],
)
def test_a_reference_that_did_not_learn_gives_no_verdict(standard, others, problem):
    result = _result(standard=standard, mixit=[0.29, 0.29], **others)
    given = reading(result, 0.02, steps=1200)
    assert given["rows"] == [] and any(problem in p for p in given["no_reference"])
    assert given["next"].startswith("train.steps=2400")


def test_a_reference_whose_seeds_disagree_is_still_read_seed_by_seed():
    """The reading is paired per seed: the reference's own spread refuses nothing (the
    tuned `hf:llama` fuzzy recall: standard 0.904-0.959, every variant far below on each
    seed)."""
    result = _result(standard=[0.70, 0.76, 0.70, 0.76], mixit=[0.3] * 4)
    assert reference_problems(result, 0.02) == []
    assert litmus(result, 0.02)[0].matches is False


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


def plant_gaps(monkeypatch, gaps):
    """Every run scores 0.9 in its task's metric, MixiT's seed s 0.9 + gaps[s]."""
    import importlib

    from mixit.tasks import get_task

    def planted(model, data, config, training_rows=True):
        gap = gaps.get(config.seed, 0.0) if config.variant == "mixit" else 0.0
        return {get_task(config.task_name).metric: 0.9 + gap}

    monkeypatch.setattr(importlib.import_module("mixit.training.setup"), "evaluate_run", planted)


def test_seeds_auto_stops_adding_seeds_once_the_verdict_is_decided(tmp_path, monkeypatch):
    # Planted: MixiT's per-seed gaps 0, -0.015, 0, 0, ...: on three seeds the interval crosses
    # the 0.02 tolerance, on four it lies within it.
    gaps = {1: -0.015}
    plant_gaps(monkeypatch, gaps)
    quick = RETRIEVAL | {"train.steps": 2, "train.eval_every": 2}
    result = compare("retrieval", ["standard", "mixit"], seeds="auto", out=tmp_path,
                     overrides=quick, tune=[])  # fmt: skip
    assert result["seeds"] == [0, 1, 2, 3]
    (mixit,) = result["litmus"]["rows"]
    assert mixit["matches"] is True and result["seeds_auto"]["undecided"] == []
    assert "--seeds auto: 4 seeds" in format_table(result)
    # A verdict the interval never decides stops at the maximum.
    gaps.update({1: -0.019, 3: -0.019, 5: -0.019})
    undecided = compare("retrieval", ["standard", "mixit"], seeds="auto", out=tmp_path / "b",
                        overrides=quick, tune=[])  # fmt: skip
    assert undecided["seeds"] == list(range(6)) and undecided["seeds_auto"]["undecided"] == [
        "mixit"
    ]


def test_suite_seeds_auto_decides_task_by_task(tmp_path, monkeypatch):
    # The same planted gaps on two tasks: each stops at four seeds, and the summary says so.
    from mixit.study.suite import suite

    plant_gaps(monkeypatch, {1: -0.015})
    quick = {"train.steps": 2, "train.eval_every": 2, "train.stop_at": None}
    quick |= {"task.n_train": 200, "task.n_test": 32, "train.eval_examples": 32}
    results = suite(["retrieval", "selective-copying"], ["standard", "mixit"], seeds="auto",
                    out=tmp_path, overrides=quick, tune=[])  # fmt: skip
    assert [len(result["seeds"]) for result in results.values()] == [4, 4]
    summary = (tmp_path / "summary.md").read_text()
    assert "seeds auto (3 to 6): retrieval 4, selective-copying 4" in summary
    assert summary.count("--seeds auto: 4 seeds") == 2


def test_a_comparison_scored_on_validation_says_so(tmp_path):
    quick = RETRIEVAL | {"train.steps": 2, "train.eval_every": 2, "train.validation_fraction": 0.5}
    result = compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=quick, tune=[])
    assert result["evaluated_on"] == "validation"
    assert "scored on the validation split, not the test split" in format_table(result)
    rows = read_results_csv(tmp_path / "results.csv")
    assert {row["evaluated_on"] for row in rows} == {"validation"}


def test_a_model_below_chance_is_named_with_what_chance_is_on_its_task():
    result = _result(chance=0.25, standard=[0.99, 0.98], mixit=[0.10, 0.12], random=[0.24, 0.25])
    result["task"] = "mqar"
    rows = {r.model: r for r in litmus(result, 0.02)}
    assert rows["random"].below_chance == ""  # within the tolerance of chance
    assert rows["mixit"].below_chance.startswith("0.110 is below chance 0.250 (naming one of")
    shown = litmus_lines(
        result | {"litmus": {"tolerance": 0.02, "rows": [rows["mixit"].to_json()]}}
    )
    assert any("worse than a guess that ignores the input" in line for line in shown)
