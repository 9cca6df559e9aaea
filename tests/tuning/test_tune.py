"""The tuning protocol (docs/tuning.md, `mixit.tuning.halving`): selection on held-out training data
only, edges that extend the grid, halving that keeps the best rate, the budget rule, the
initialisation choice of a `model.arch` model, `--no-tune`, and an estimate that reads a finished
tuning back."""

import dataclasses
import importlib
import json
import math
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

from mixit import compare
from mixit.cli import main
from mixit.config.overrides import with_settings
from mixit.running.runs import run_dir_name
from mixit.study.estimate import estimate_comparison, tuning_estimate_line, tuning_seconds
from mixit.study.plan import Comparison
from mixit.tasks import get_task
from mixit.tasks.base import Split, TaskData
from mixit.tasks.splits import hold_out_validation
from mixit.training.resolve import resolve_config
from mixit.training.rundir import read_records
from mixit.training.train import run as train_run
from mixit.tuning import halving as tuning
from mixit.tuning import rules as tuning_rules
from mixit.tuning.halving import Tuner
from mixit.tuning.records import TuningRecord
from mixit.tuning.rules import (
    GRID,
    GRID_STEP,
    Candidate,
    Trial,
    ValidationPoint,
    validation_points,
)

QUICK = {
    "task.vocab_size": 16,
    "task.max_pairs": 3,
    "task.n_train": 300,
    "task.n_test": 64,
    "model.n_embd": 16,
    "model.n_head": 2,
    "model.n_layer": 1,
    "train.steps": 8,
    "train.eval_every": 2,
    "train.eval_examples": 64,
    "train.plateau": 0,  # budgets read whole: the stop rule is tested in test_early_stop
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


def test_a_halted_run_resumed_is_the_uninterrupted_run(tmp_path):
    config = resolve_config("retrieval", "standard", "tiny", 0, QUICK)
    whole = train_run(config, tmp_path / "whole")
    config = config.with_train(halt_at=4)
    halted = train_run(config, tmp_path / "halted")
    assert halted["stopped"] == "halted" and halted["steps_run"] == 4
    assert not (tmp_path / "halted" / "summary.json").exists()
    config = config.with_train(halt_at=0)
    resumed = train_run(config, tmp_path / "halted", resume=True)
    assert resumed["metrics"] == whole["metrics"] and resumed["steps_run"] == 8


def test_the_tuning_seed_is_none_of_the_verdict_seeds():
    assert tuning_rules.tuning_seed(range(3)) == 1000
    assert tuning_rules.tuning_seed([*range(100, 103), *range(200, 203)]) == 1000
    assert tuning_rules.tuning_seed(range(998, 1002)) == 1002


def test_rungs_are_evaluation_steps_near_a_quarter_and_a_half_of_the_budget():
    assert tuning_rules.rung_steps(2400, 400) == [800, 1200, 2400]
    assert tuning_rules.rung_steps(1000, 250) == [250, 500, 1000]
    assert tuning_rules.rung_steps(4, 4) == [4]


def planted(monkeypatch, score_of) -> list[tuple[int, int]]:
    """Replace training by ``score_of(exponent, step)``, a validation score; returns the log of
    (exponent, step) each trial was trained to."""
    trained = []

    def train_to(self, trials, step):
        for trial in trials:
            if trial.stopped != "halted":
                continue
            end = min(step, trial.config.train.steps)
            trained.append((trial.candidate.exponent, end))
            trial.scores[end] = score_of(trial.candidate.exponent, end)
            trial.steps_run = end
            trial.stopped = "budget" if end == trial.config.train.steps else "halted"
            trial.run_dir = str(id(trial))
            self.spent[trial.run_dir] = 100.0 * end  # 100 s a step

    monkeypatch.setattr(Tuner, "train_to", train_to)
    return trained


def quick_base(steps=16):
    return resolve_config("retrieval", "standard", "tiny", 0, {**QUICK, "train.steps": steps})


def halve(tmp_path, grid=None):
    halved = Tuner(1000, tmp_path).halve({"standard": (quick_base(), grid or tuning_rules.grid())})
    return {key: halving.record.to_json() for key, halving in halved.items()}


def test_halving_keeps_the_best_rate_and_trains_the_others_part_of_the_budget(
    tmp_path, monkeypatch
):
    # The best rate (the preset's) leads at every rung, but only narrowly at the first.
    trained = planted(monkeypatch, lambda k, step: 0.5 + step / 100 - 0.01 * abs(k) * (k + 2))
    record = halve(tmp_path)["standard"]
    preset_lr = resolve_config("retrieval", "standard", "tiny", 0, QUICK).train.lr
    assert record["train.lr"] == pytest.approx(preset_lr) and record["edge"] == "interior"
    steps = {k: max(s for e, s in trained if e == k) for k in GRID}
    assert steps[0] == 16 and sorted(steps.values()) == [4, 8, 16]  # 1/4, 1/2 and the budget
    assert [rung["step"] for rung in record["rungs"]] == [4, 8, 16]


def test_a_best_rate_at_an_edge_extends_the_grid_until_it_is_interior(tmp_path, monkeypatch):
    planted(monkeypatch, lambda k, step: 1.0 - 0.1 * abs(k - 2))  # the best rate: p * 10
    record = halve(tmp_path)["standard"]
    preset_lr = resolve_config("retrieval", "standard", "tiny", 0, QUICK).train.lr
    assert record["train.lr"] == pytest.approx(preset_lr * GRID_STEP**2)
    assert record["edge"] == "extended"
    assert record["extended_with"] == pytest.approx([preset_lr * GRID_STEP**2, preset_lr * 10**1.5])


def test_the_grid_stops_at_its_bound_and_says_so(tmp_path, monkeypatch):
    planted(monkeypatch, lambda k, step: 0.5 + 0.1 * k)  # ever higher rates score better
    record = halve(tmp_path)["standard"]
    tried = sorted(lr for lr, *_ in validation_points(record))
    assert len(tried) == 3 + tuning_rules.EDGE_BOUND - 1 and record["edge"] == "bound"
    assert math.log10(tried[-1] / tried[0]) == pytest.approx(2.0)
    assert all(set(point) == {"lr", "init", "score", "steps"} for point in record["validation"])


def test_max_hours_leaves_out_a_step_past_the_edge_and_says_so(tmp_path, monkeypatch):
    """The best rate lies two steps past the grid's top. At the first rung the three rates have
    cost 1,200 s: a step past the edge (400 s more) fits in 1,600 s of --max-hours, a second
    one does not, and in 1,500 s not even the first."""
    planted(monkeypatch, lambda k, step: 1.0 - 0.1 * abs(k - 2))  # the best rate: p * 10
    base = {"standard": (quick_base(), tuning_rules.grid())}
    uncapped = Tuner(1000, tmp_path).halve(base)["standard"].record
    assert len(uncapped.extended_with) == 2 and "cut" not in uncapped.to_json()
    once = Tuner(1000, tmp_path / "1600", max_hours=1600 / 3600).halve(base)["standard"].record
    assert len(once.extended_with) == 1 and once.edge == "edge"
    tight = Tuner(1000, tmp_path / "1500", max_hours=1500 / 3600).halve(base)["standard"].record
    assert not tight.extended_with and tight.edge == "edge"
    for record in (once, tight):
        past = f"the grid's step past train.lr={record.lr:g} (its best rate at an edge)"
        assert record.to_json()["cut"] == [past]


def test_max_hours_leaves_a_budget_undoubled_and_marks_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tuning, "still_rising", lambda trial: True)
    base = quick_base(steps=8)
    rising = Trial(
        Candidate(0),
        tuning_rules.candidate_config(base, Candidate(0), 1000),
        tuning_rules.Scoring.of(base),
    )
    rising.steps_run, rising.run_dir, rising.scores = 8, "planted", {8: 0.5}
    tuner = Tuner(1000, tmp_path, max_hours=2.5)  # a doubling costs 2 h more: 3 h in all
    tuner.spent["planted"] = 3600.0
    steps, budgets = tuning.budget(tuner, base, rising)
    assert steps == 8 and budgets == [
        {"steps": 8, "score": 0.5, "stopped": "halted", "rising": True, "cut": True}
    ]
    assert tuner.cut[None] == ["the budget's doubling from 8 steps (still rising)"]


def test_tuning_records_written_as_lists_are_read_as_labelled_points():
    old = {"validation": [[0.00063, "own", 1.0, 500]]}
    new = {"validation": [{"lr": 0.00063, "init": "own", "score": 1.0, "steps": 500}]}
    assert validation_points(old) == validation_points(new)
    (point,) = validation_points(old)
    assert (point.lr, point.init, point.score, point.steps) == (0.00063, "own", 1.0, 500)


def test_selection_never_reads_the_test_split(tmp_path, monkeypatch):
    # Every evaluation of the real test split says the lowest rate is best, every other one
    # (the validation split) the highest: only a protocol that reads the test split can pick
    # a low rate.
    train_module = importlib.import_module("mixit.training.setup")  # where a run evaluates
    evaluate = train_module.evaluate_run
    spec = get_task("retrieval")

    def planted_evaluate(model, data, config, training_rows=True):
        metrics = evaluate(model, data, config, training_rows)
        test = spec.make_data(config.task, config.seed).test  # the real test split
        on_test = data.test.inputs.shape == test.inputs.shape and bool(
            (data.test.inputs == test.inputs).all()
        )
        signal = -math.log10(config.train.lr) if on_test else math.log10(config.train.lr)
        return metrics | {"test_accuracy": 10 + signal}

    monkeypatch.setattr(train_module, "evaluate_run", planted_evaluate)
    result = compare("retrieval", ["standard"], seeds=1, out=tmp_path, overrides=QUICK, tune=["lr"])
    chosen = result["tuned"]["standard"]
    assert chosen["edge"] == "bound" and chosen["train.lr"] == max(
        lr for lr, *_ in validation_points(chosen)
    )
    assert chosen["seed"] == 1000


def test_a_model_still_rising_trains_again_at_twice_its_budget_up_to_the_cap(tmp_path):
    tuner, base = Tuner(1000, tmp_path), quick_base(steps=8)
    candidate = Candidate(0)
    rising = Trial(
        candidate,
        tuning_rules.candidate_config(base, candidate, 1000),
        tuning_rules.Scoring.of(base),
    )
    tuner.train_to([rising], 8)
    records = read_records(Path(rising.run_dir) / "metrics.jsonl")
    half = next(r for r in records if r["step"] == 4)["test_accuracy"]
    last = records[-1]["test_accuracy"]
    rises = last - half > 0.02 and last < 1 - 0.02  # a run at its ceiling has converged
    assert tuning_rules.still_rising(rising) == rises
    steps, budgets = tuning.budget(tuner, base, rising)
    assert budgets[0]["steps"] == 8 and budgets[0]["rising"] == rises
    assert all(b["steps"] == 8 * 2**i for i, b in enumerate(budgets))
    assert steps == budgets[-1]["steps"] <= tuning_rules.BUDGET_CAP * 8
    assert not budgets[-1]["rising"] or steps == tuning_rules.BUDGET_CAP * 8


def test_compare_tunes_each_model_and_trains_its_seeds_at_the_choice(tmp_path):
    result = compare(
        "retrieval", ["standard", "mixit"], seeds=2, out=tmp_path, overrides=QUICK, tune=["lr"]
    )
    stored = json.loads((tmp_path / "tuning.json").read_text())
    assert stored == result["tuned"]
    for model, tuned in stored.items():
        config = resolve_config("retrieval", model, "tiny", 0, {**QUICK, **tuned["overrides"]})
        for seed in (0, 1):
            config = dataclasses.replace(config, seed=seed)
            summary = json.loads(
                (tmp_path / "runs" / run_dir_name(config) / "summary.json").read_text()
            )
            assert summary["evaluated_on"] == "test" and summary["steps"] == tuned["steps"]
        held_out = [
            json.loads((d / "config.json").read_text())
            for d in (tmp_path / "runs").iterdir()
            if d.name.startswith(f"retrieval-{model}-s1000-")
        ]
        assert held_out and all(c["train"]["validation_fraction"] == 0.1 for c in held_out)


def test_no_tune_trains_exactly_the_untuned_runs(tmp_path):
    overrides = {**QUICK, "model.arch": "hf:llama"}
    out = tmp_path / "untuned"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--seeds", "2"]
    argv += ["--no-tune", "--out", str(out), *(f"{k}={v}" for k, v in overrides.items())]
    assert main(argv) == 0
    plan = Comparison("retrieval", ("standard", "mixit"), "tiny", range(2), out, overrides)
    expected = {run_dir_name(config) for config in plan.configs().values()}
    assert {d.name for d in (out / "runs").iterdir()} == expected
    assert not (out / "tuning.json").exists()


def test_an_arch_model_tunes_by_default_and_every_variant_chooses_its_own_init(tmp_path):
    overrides = {**QUICK, "model.arch": "hf:llama", "train.steps": 4}
    result = compare("retrieval", ["standard", "frozen-qk"], out=tmp_path, overrides=overrides)
    for record in result["tuned"].values():
        assert {point.init for point in validation_points(record)} == {"own", "small-output"}
        assert record["init_tuned"]


def test_a_variants_initialisation_is_chosen_apart_from_the_references(tmp_path, monkeypatch):
    # Planted: the reference learns under its own initialisation only, Frozen-QK under
    # small-output only (uniform frozen attention under the other).
    train_module = importlib.import_module("mixit.training.setup")
    learns_under = {"standard": "own", "frozen-qk": "small-output"}

    def planted_evaluate(model, data, config, training_rows=True):
        solved = config.model.arch_init == learns_under[config.variant]
        return {"test_accuracy": 0.9 if solved else 0.1}

    monkeypatch.setattr(train_module, "evaluate_run", planted_evaluate)
    overrides = {**QUICK, "model.arch": "hf:llama", "train.steps": 4}
    tuned = compare("retrieval", ["standard", "frozen-qk"], out=tmp_path, overrides=overrides)[
        "tuned"
    ]
    assert {model: tuned[model]["init"] for model in tuned} == learns_under
    assert tuned["frozen-qk"]["overrides"]["model.arch_init"] == "small-output"


def test_an_initialisation_the_user_gives_is_not_tuned(tmp_path):
    overrides = {**QUICK, "model.arch": "hf:llama", "model.arch_init": "own", "train.steps": 4}
    tuned = compare("retrieval", ["standard", "frozen-qk"], out=tmp_path, overrides=overrides)[
        "tuned"
    ]
    assert all(not record["init_tuned"] and record["init"] is None for record in tuned.values())


REPRODUCE_QUICK = {
    "train.steps": 8,
    "train.eval_every": 2,
    "task.num_pairs": 256,
    "train.eval_examples": 256,
}


def test_reproduce_tunes_each_group_of_seeds_once_and_trains_its_seeds_at_the_choice(tmp_path):
    from mixit.paper import reproduce
    from mixit.paper.runner import plan_reproduction
    from mixit.study.experiment import Reproduction

    how = Reproduction("tiny", seeds=2, out=tmp_path, overrides=REPRODUCE_QUICK, tune=True)
    reproduce(["table4"], how)
    stored = json.loads((tmp_path / "tuning.json").read_text())
    _, configs = plan_reproduction(["table4"], how)
    groups = {(run.task, run.model, run.overrides) for run in configs}
    assert len(stored) == len(groups) and all(row["seed"] == 1000 for row in stored)
    chosen = {(row["task"], row["model"]): row["overrides"] for row in stored}
    results = json.loads((tmp_path / "table4" / "results.json").read_text())
    assert results["tune"].startswith("protocol")
    for run, config in configs.items():
        config = with_settings(config, chosen[run.task, run.model])
        assert (tmp_path / "runs" / run_dir_name(config) / "summary.json").exists()
    again = Reproduction("tiny", seeds=2, out=tmp_path, overrides=REPRODUCE_QUICK, tune=True)
    assert reproduce(["table4"], again, train=False)  # --no-train reads tuning.json back


def test_table6_trains_every_series_the_same_steps_and_tunes_their_init_alike():
    from mixit.paper import table6

    steps = {run.config("tiny").train.steps for run in table6.plan("tiny", range(1))}
    assert steps == {600}
    assert set(table6.EXPERIMENT.tune_inits) == {"small-output", "fan-in"}


def test_table5_reports_table3s_mixit_beside_the_spread(tmp_path):
    from mixit.paper import table5

    planned = table5.plan("tiny", range(2))
    scales = {(r.task, r.config("tiny").model.mixing_scale) for r in planned}
    assert {("addition", "per-head-spread"), ("addition", "sequence")} <= scales
    summaries = {run: {"metrics": {"test_accuracy": 0.5}} for run in planned}
    report = table5.report("tiny", range(2), summaries, tmp_path, {})
    assert "table 3's MixiT" in report.markdown
    assert set(report.results["table3_construction"]) == set(table5.C7_TASKS)


def test_a_reference_that_learns_at_no_rate_gives_no_verdict_and_says_what_was_tried(tmp_path):
    # This quick retrieval's chance level (0.54) is out of reach of its standard model.
    result = compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=QUICK, tune=["lr"])
    assert result["tuned"]["standard"]["learned"] is False
    cause = result["litmus"]["no_reference"][0]
    assert "did not learn at any rate of the grid" in cause and "uniformity" in cause
    assert all(f"{p.lr:.3g}" in cause for p in validation_points(result["tuned"]["standard"]))
    assert result["litmus"]["rows"] == []


def test_a_model_that_learns_only_with_a_doubled_budget_learned():
    base = resolve_config("addition", "mixit", "tiny", 0, {})
    grid_only = [ValidationPoint(0.002, None, 0.01, 900)]
    doubled = [{"score": 0.01}, {"score": 0.6}, {"score": 1.0}]
    assert not tuning_rules.learned(grid_only, [{"score": 0.01}], base, 1000)
    assert tuning_rules.learned(grid_only, doubled, base, 1000)


def test_a_lead_within_the_tolerance_does_not_grow_the_grid(tmp_path, monkeypatch):
    planted(monkeypatch, lambda k, step: 0.9 + 0.005 * k)  # the highest rate, by 0.005
    record = halve(tmp_path)["standard"]
    assert len(record["validation"]) == len(GRID) and record["extended_with"] == []
    assert record["edge"] == "edge"


def test_a_tuning_resumed_over_its_finished_runs_chooses_as_it_did(tmp_path, monkeypatch):
    # A score that moves at every step: the weights' size.
    train_module = importlib.import_module("mixit.training.setup")

    def planted_evaluate(model, data, config, training_rows=True):
        size = sum(float(p.detach().abs().sum()) for p in model.parameters())
        return {"test_accuracy": size % 1.0}

    monkeypatch.setattr(train_module, "evaluate_run", planted_evaluate)
    base = quick_base(steps=8)
    first = tuning.tune({"standard": base}, [0], tmp_path)
    # The promoted runs finished their whole budget; judged again, each is scored at every
    # rung as the first halving scored it there, not at its end.
    again = tuning.tune({"standard": base}, [0], tmp_path)
    assert again == first


def test_every_model_of_a_task_trains_the_same_budget(tmp_path, monkeypatch):
    # Planted: the standard model is still rising at 8 steps, not at 16; MixiT is not rising
    # at its own 8 but, raised to 16, rises again up to the cap (32, still rising there),
    # where the standard model is raised to it in turn.
    def planted_rising(trial):
        steps = trial.config.train.steps
        return steps == 8 if trial.config.variant == "standard" else steps >= 16

    monkeypatch.setattr(tuning, "still_rising", planted_rising)
    result = compare(
        "retrieval", ["standard", "mixit"], seeds=1, out=tmp_path, overrides=QUICK, tune=["lr"]
    )
    tuned = result["tuned"]
    assert {model: t["steps"] for model, t in tuned.items()} == {"standard": 32, "mixit": 32}
    assert [(b["steps"], b.get("raised", False)) for b in tuned["mixit"]["budgets"]] == [
        (8, False),
        (16, True),
        (32, False),
    ]
    assert tuned["mixit"]["raised_from"] == 8 and tuned["standard"]["raised_from"] == 16
    assert tuned["mixit"]["capped"] and not tuned["standard"]["capped"]
    assert [row["steps_run"] for row in result["rows"]] == [[32], [32]]


# A record that chose nothing, for a tuning planted in place of the protocol.
HALVED_NOWHERE = TuningRecord(0.001, None, "interior", [], [], [], "runs/x", steps=1, seed=1000)


def test_reproduce_gives_one_budget_to_the_groups_of_a_task_and_setting(monkeypatch):
    from mixit.paper import runner
    from mixit.study.experiment import Reproduction

    seen = {}

    def planted_tune(bases, seeds, runs_dir, *, inits, families, launch, progress, floors=None):
        seen["families"] = families
        return {key: HALVED_NOWHERE for key in bases}

    monkeypatch.setattr(tuning, "tune", planted_tune)
    monkeypatch.setattr(runner, "write_json", lambda *args: None)
    how = Reproduction("tiny", seeds=1, tune=True)
    experiments, configs = runner.plan_reproduction(["table1"], how)
    groups, _ = runner.tuning_groups(experiments, configs, how)
    runner.tune_plan(experiments, configs, how)
    members: dict = {}
    for key, family in seen["families"].items():
        members.setdefault(family, []).append(groups[key][0])
    assert {task for task, _ in members} == {"retrieval", "khop"}
    for (task, overrides), runs in members.items():
        assert {(r.task, r.overrides) for r in runs} == {(task, overrides)}
        assert "standard" in {r.model for r in runs} and len(runs) > 1


def test_a_finished_tuning_is_read_back_and_a_stale_one_is_not(tmp_path):
    models = ("standard", "mixit")
    result = compare("retrieval", list(models), seeds=2, out=tmp_path, overrides=QUICK, tune=["lr"])
    plan = Comparison("retrieval", models, "tiny", range(2), tmp_path, QUICK)
    done = estimate_comparison(plan, tunes=True)
    assert [(row["tuned"], row["runs"]) for row in done["rows"]] == [(True, 0), (True, 0)]
    cost = tuning_seconds(done["rows"], QUICK)
    assert (cost.most, cost.done) == (0, models)
    assert tuning_estimate_line(cost).startswith("tuning adds nothing")
    # A verdict run removed is priced again, at its model's tuned budget.
    verdict = result["rows"][0]
    assert verdict["model"] == "standard"
    runs = sorted((tmp_path / "runs").glob("retrieval-standard-s0-*"))
    shutil.rmtree(runs[0])
    again = estimate_comparison(plan, tunes=True)["rows"][0]
    assert (again["runs"], again["steps"]) == (1, result["tuned"]["standard"]["steps"])
    # Other settings, or a record that names another run, price as untuned.
    other = Comparison("retrieval", models, "tiny", range(2), tmp_path, {**QUICK, "train.steps": 6})
    assert not any(row["tuned"] for row in estimate_comparison(other, tunes=True)["rows"])
    records = json.loads((tmp_path / "tuning.json").read_text())
    records["mixit"]["run_dir"] = "runs/retrieval-mixit-s1000-0000000000"
    (tmp_path / "tuning.json").write_text(json.dumps(records))
    rows = estimate_comparison(plan, tunes=True)["rows"]
    assert [row["tuned"] for row in rows] == [True, False]
    assert not any(row["tuned"] for row in estimate_comparison(plan)["rows"])


def test_a_familys_floor_raises_a_group_tuned_after_it(tmp_path, monkeypatch):
    # Planted: nothing is still rising, so each group's own rule ends at its 8 steps; the
    # family's floor (the budget its other groups were tuned to before) raises it to 16.
    monkeypatch.setattr(tuning, "still_rising", lambda trial: False)
    base = resolve_config("retrieval", "frozen-mlp", "tiny", 0, QUICK)
    records = tuning.tune(
        {"row": base}, range(1), tmp_path, families={"row": "retrieval"}, floors={"retrieval": 16}
    )
    assert records["row"].steps == 16 and records["row"].raised_from == 8
    assert [b["steps"] for b in records["row"].budgets] == [8, 16]
