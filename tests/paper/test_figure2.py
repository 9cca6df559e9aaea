"""Figure 2 reads retrieval's default axis through the axis reading of `compare --axis`, and
its numbers and claim C3 come out as the runs' own accuracies say."""

from __future__ import annotations

from mixit.paper import figure2
from mixit.study.axis import parse_axis
from mixit.study.experiment import runs

SEEDS = range(300, 303)
# Planted accuracies by pairs and model: MixiT drops most (0.9 -> 0.4).
PLANTED = {
    3: {"standard": 1.0, "frozen-mlp": 1.0, "frozen-qk": 0.99, "mixit": 0.9},
    4: {"standard": 1.0, "frozen-mlp": 0.98, "frozen-qk": 0.97, "mixit": 0.8},
    8: {"standard": 0.99, "frozen-mlp": 0.97, "frozen-qk": 0.9, "mixit": 0.4},
}


def summaries() -> dict:
    found = {}
    for pairs, by_model in PLANTED.items():
        for run in runs("retrieval", figure2.MODELS, SEEDS, "tiny", {"task.max_pairs": pairs}):
            accuracy = by_model[run.model] - 0.01 * (run.seed - SEEDS[0])
            found[run] = {
                "metrics": {"test_accuracy": accuracy},
                "steps": 1200,
                "steps_run": 1200,
                "stopped": "budget",
                "params_trainable": 1,
                "train_seconds": 1.0,
                "chance": 0.27,
            }
    return found


def test_figure2_is_retrievals_default_axis_and_keeps_its_numbers(tmp_path):
    assert parse_axis("default", "retrieval", "tiny", {}).values == figure2.PAIRS["tiny"]
    report = figure2.report("tiny", SEEDS, summaries(), tmp_path, {})
    accuracy = report.results["accuracy"]
    for number, pairs in enumerate(PLANTED):
        for model in figure2.MODELS:
            expected = [PLANTED[pairs][model] - 0.01 * k for k in range(3)]
            assert accuracy[model][number] == expected
    assert round(report.results["drop"]["mixit"], 6) == 0.5
    (c3,) = report.claims
    assert c3.id == "C3" and c3.verdict == "reproduced"
    assert (tmp_path / "figure2.png").is_file()
