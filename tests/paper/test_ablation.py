"""`mixit reproduce ablation`: each difference flips its options for the right runs only."""

import json

import pytest

from mixit.cli import main
from mixit.paper.ablation import ablate, plan_ablation
from mixit.paper.differences import EQUATIONS, flips
from mixit.running.runs import run_dir_name
from mixit.study.experiment import Reproduction
from mixit.study.setting import Setting

QUICK = {"train.steps": 4, "train.eval_every": 4, "train.eval_examples": 64, "train.batch_size": 16}


def test_a_mixit_only_difference_leaves_the_softmax_models_alone():
    assert flips("width-factor", "retrieval", "standard") == {}
    assert flips("width-factor", "retrieval", "mixit") == {
        "model.width_scaling": True,
        "model.width_base": 512.0,
        "model.width_base_down": 1.0,
    }
    assert flips("biases", "retrieval", "standard") == {"model.bias": True}


def test_a_task_difference_applies_to_its_task_only():
    assert flips("right-padding", "sentiment", "standard") == {"task.padding": "right"}
    assert flips("right-padding", "retrieval", "mixit") == {"task.padding": "right"}
    assert flips("right-padding", "khop", "mixit") == {}
    assert flips("addition-layout", "addition", "standard")["task.stop_token"] is True
    assert flips("non-causal", "sentiment", "mixit") == {"model.mixing_causal": False}
    assert flips("non-causal", "sentiment", "standard") == {}


def test_unflipped_runs_share_the_equations_run_directories():
    _, configs = plan_ablation(["sink"], ["C1"], Reproduction("tiny", seeds=1))
    names = {
        d: {run: run_dir_name(c) for (e, run), c in configs.items() if e == d}
        for d in (EQUATIONS, "sink")
    }
    for run, name in names["sink"].items():
        same = names[EQUATIONS][run] == name
        assert same == (run.model != "mixit"), run


def test_ablation_writes_a_report_and_trains_only_what_changed(tmp_path):
    out = tmp_path / "rep"
    results = ablate(["sink"], ["C1"], Reproduction("tiny", 1, out=out, overrides=QUICK))
    assert results["runs_trained"] == 8 + 2  # table1's runs, then the two MixiT runs again
    assert set(results["differences"]) == {EQUATIONS, "sink"}
    assert results["differences"]["sink"]["C1"]["shift"]["retrieval"] != "-"
    report = (out / "ablation" / "report.md").read_text()
    assert "| sink |" in report and "| equations |" in report
    again = ablate(["sink"], ["C1"], Reproduction("tiny", 1, out=out, overrides=QUICK))
    assert again["runs_trained"] == 0
    partial = ablate(
        ["sink", "biases"], ["C1"], Reproduction("tiny", 1, out=out, overrides=QUICK), train=False
    )
    assert partial["unfinished"] == ["biases"] and partial["runs_trained"] == 0
    assert set(partial["differences"]) == {EQUATIONS, "sink"}
    assert (
        "Not finished yet, so not in the table: biases" in (out / "ablation/report.md").read_text()
    )
    stored = json.loads((out / "ablation" / "results.json").read_text())
    assert stored["claims"] == ["C1"]
    # A claim whose runs have not trained (C6: Table 4) is left out, the finished one reported.
    some = ablate(
        ["sink"], ["C1", "C6"], Reproduction("tiny", 1, out=out, overrides=QUICK), train=False
    )
    assert some["claims"] == ["C1"] and some["claims_left_out"] == ["C6"]
    assert set(some["differences"]["sink"]) == {"C1"}
    assert "claim C6" in (out / "ablation" / "report.md").read_text()
    quick = [f"{k}={v}" for k, v in QUICK.items()]
    argv = ["reproduce", "table1", "--seeds", "1", "--seed", "0", "--no-train", "--out", str(out)]
    argv += quick
    assert main(argv) == 0
    claims = {c["id"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert "ablation/report.md" in claims["C1"]["ablation"]
    assert claims["C3"]["ablation"] == ""  # not a claim the ablation measures
    assert f"- **Ablation:** {claims['C1']['ablation']}" in (out / "claims.md").read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--claims", "C4"], "does not cover claim 'C4'"),
        (["--differences", "colour"], "unknown difference 'colour'"),
        (["--tuned", "best.json"], "takes no --tuned"),
        (["--no-train"], "equations' runs of the ablation"),
    ],
)
def test_bad_ablation_input_exits_2(argv, message, tmp_path, capsys):
    assert main(["reproduce", "ablation", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_claims_option_belongs_to_the_ablation(tmp_path, capsys):
    assert main(["reproduce", "table1", "--claims", "C1", "--out", str(tmp_path / "x")]) == 2
    assert "belong to `mixit reproduce ablation`" in capsys.readouterr().err


def test_every_option_the_authors_construction_changes_has_a_difference():
    from mixit.models.adapters import get_variant
    from mixit.models.constructions import construction_overrides
    from mixit.models.variants import VARIANTS
    from mixit.paper.differences import DIFFERENCES
    from mixit.tasks import get_task
    from mixit.training.resolve import resolve_config

    ablated = {key for _, keys in DIFFERENCES.values() for key in keys}
    for task in ("retrieval", "khop", "addition", "dyck", "memorization", "sentiment"):
        for model in VARIANTS:
            equations = resolve_config(task, model, preset="tiny").to_dict()
            bundle = construction_overrides(
                "authors", get_variant(model), get_task(task).authors_settings
            )
            for key, value in bundle.items():
                section, name = key.split(".")
                changed = equations[section][name] != value
                assert key in ablated or not changed, (task, model, key)


def test_every_claims_headline_reads_runs_of_its_own_experiment():
    """A claim's headline names runs its experiment plans, one per seed, at every scale: the
    runs it turns on are declared beside its judge, not matched by override keys."""
    from mixit.paper import EXPERIMENTS
    from mixit.paper.ablation import ablated_claims
    from mixit.paper.claims import experiment_of

    seeds = range(2)
    for scale in ("tiny", "small", "paper"):
        assert {"C1", "C2", "C5", "C6", "C7", "C8"} <= set(ablated_claims(scale))
        for claim in ablated_claims(scale):
            experiment = EXPERIMENTS[experiment_of(claim)]
            planned = set(experiment.plan(scale, seeds))
            for headline in experiment.headlines(scale, seeds)[claim]:
                assert set(headline.runs) <= planned and set(headline.reference) <= planned
                assert sorted(run.seed for run in headline.runs) == [0, 1]
                assert {run.model for run in headline.runs} == {"mixit"}
                assert {run.model for run in headline.reference} <= {"standard"}


def test_c7s_headline_reads_both_tasks_its_rule_judges():
    from mixit.paper import EXPERIMENTS

    labels = [h.label for h in EXPERIMENTS["table5"].headlines("tiny", range(1))["C7"]]
    assert labels == ["addition, 64 heads", "dyck, 64 heads"]


def test_a_claims_shift_reads_its_headlines_runs_only():
    from mixit.paper import EXPERIMENTS
    from mixit.study.references import per_seed

    seeds = range(2)
    every = {run for e in EXPERIMENTS.values() for run in e.plan("tiny", seeds)}
    summaries = {run: {"metrics": {"test_accuracy": float(i)}} for i, run in enumerate(every)}
    for headline in EXPERIMENTS["table6"].headlines("tiny", seeds)["C8"]:
        values = per_seed(summaries, headline.runs, headline.metric)
        expected = {run.seed: summaries[run]["metrics"]["test_accuracy"] for run in headline.runs}
        assert values == expected


def test_a_reference_that_did_not_learn_is_named_and_flips_no_verdict(tmp_path):
    from mixit.paper import EXPERIMENTS
    from mixit.paper.ablation_report import dependence
    from mixit.study.references import unlearned_reference

    planned = set(EXPERIMENTS["table1"].plan("tiny", range(2)))
    headline = EXPERIMENTS["table1"].headlines("tiny", range(2))["C1"][0]

    def summaries(standard: float) -> dict:
        return {
            run: {"metrics": {"test_accuracy": standard if run.model == "standard" else 0.9},
                  "chance": 0.27}
            for run in planned
        }  # fmt: skip

    assert unlearned_reference(summaries(0.99), headline) == ""
    why = unlearned_reference(summaries(0.30), headline)
    assert "standard on retrieval reaches 0.300 (seed 0), 0.300 (seed 1)" in why
    assert "not clearly beyond chance 0.270" in why

    cell = {"verdict": "reproduced", "no_reference": []}
    results = {"scale": "tiny", "seeds": 2, "first_seed": 0, "overrides": {}}
    results["differences"] = {
        EQUATIONS: {"C1": cell},
        "init-0.02": {"C1": {"verdict": "not reproduced", "no_reference": [why]}},
        "sink": {"C1": cell},
    }
    (tmp_path / "ablation").mkdir()
    (tmp_path / "ablation" / "results.json").write_text(json.dumps(results))
    note = dependence(tmp_path, Setting("tiny", 2))["C1"]
    assert "flipped" not in note
    assert "as under each of `sink`; no reference under `init-0.02`" in note


def test_ablation_estimate_prices_each_difference_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "x"
    argv = ["reproduce", "ablation", "--estimate", "--target", "cpu", "--seeds", "1"]
    assert main([*argv, "--differences", "sink", "--claims", "C1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| difference | runs | to train |" in text
    # Table 1: 2 tasks x 4 models in each row; the sink changes the two MixiT runs only, so
    # the rows share six runs and the total counts them once.
    assert "| equations | 8 | 8 |" in text and "| sink | 8 | 8 |" in text
    assert "10 runs to train" in text and not out.exists()
