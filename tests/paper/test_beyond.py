"""Frozen-MLP beside Tables 2 and 3 (issue #105): planned where it can be tuned, shown as a
column past the paper's, read against the standard model by the litmus test, and read by no
claim."""

from __future__ import annotations

import json
from pathlib import Path

from mixit.models.variants import variant_named
from mixit.paper import runner, table2, table3
from mixit.paper.runner import plan_reproduction, runs_trained
from mixit.study.experiment import Reproduction, Run

SEEDS = range(3)


def _summary(run: Run, value: float, metric: str) -> dict:
    return {
        "metrics": {metric: value},
        "params_trainable": 1000,
        "train_seconds": 1.0,
        "steps": 100,
        "steps_run": 100,
        "stopped": "plateau",
        "run_dir": f"nowhere/{run.task}-{run.model}-{run.seed}",
    }


def test_frozen_mlp_is_planned_where_it_can_be_tuned(monkeypatch):
    presets = Reproduction("tiny", seeds=2)
    untuned = Reproduction("tiny", seeds=2, presets=False)
    # The tiny presets hold Frozen-MLP's groups of Tables 2 and 3 (added by --missing-only).
    added = {r.task for r in runs_trained(table3.EXPERIMENT, presets) if r.model == "frozen-mlp"}
    assert added == set(table3.TASKS)
    _, configs = plan_reproduction(["table3"], untuned)
    assert {run.model for run in configs} == {*table3.MODELS, "frozen-mlp"}
    # Presets without a choice for them: the paper's rows alone, and table 4, which plans
    # memorization's Frozen-MLP itself, keeps it.
    monkeypatch.setattr(runner, "uncovered", lambda runs, scale: set(runs))
    assert all(run.model != "frozen-mlp" for run in runs_trained(table3.EXPERIMENT, presets))
    assert {r.task for r in runs_trained(table3.EXPERIMENT, untuned) if r.model == "frozen-mlp"}
    _, both = plan_reproduction(["table3", "table4"], presets)
    assert {run.task for run in both if run.model == "frozen-mlp"} == {"memorization"}


def test_table3_shows_frozen_mlp_past_the_paper_with_its_litmus_reading(tmp_path: Path):
    summaries = {}
    for run in [*table3.plan("tiny", SEEDS), *table3.beyond("tiny", SEEDS)]:
        # Frozen-MLP matches on addition and falls short by 0.3 elsewhere, on every seed.
        value = 0.9 + 0.01 * run.seed
        if run.model == "frozen-mlp" and run.task != "addition":
            value -= 0.3
        summaries[run] = _summary(run, value, "test_accuracy")
    # Addition's runs trained at a choice this reproduction's tuning recorded (OUT/tuning.json).
    out = tmp_path / "table3"
    chosen = {"run_overrides": {}, "train.lr": 0.001, "steps": 100, "edge": "interior"}
    rows = [{"task": "addition", "model": m, **chosen} for m in ("standard", "frozen-mlp")]
    (tmp_path / "tuning.json").write_text(json.dumps(rows))
    for run in summaries:
        summaries[run]["lr"] = 0.001
    report = table3.report("tiny", SEEDS, summaries, out, {})
    assert "frozen-mlp (beyond the paper)" in report.markdown
    sentences = {task: r["rows"][0]["reading"] for task, r in report.results["beyond"].items()}
    assert sentences["addition"] == variant_named("frozen-mlp").if_matches
    assert "tune each model first" in sentences["dyck"]
    readings = {task: r["rows"][0]["matches"] for task, r in report.results["beyond"].items()}
    assert readings["addition"] is True
    assert readings["dyck"] is False
    assert "- dyck, frozen-mlp against standard: falls short (-0.300)" in report.markdown
    # C5 reads MixiT against the standard model, whatever Frozen-MLP did.
    assert [claim.id for claim in report.claims] == ["C5"]
    without = {run: s for run, s in summaries.items() if run.model != "frozen-mlp"}
    plain = table3.report("tiny", SEEDS, without, out, {})
    assert "beyond" not in plain.results and "beyond the paper" not in plain.markdown
    assert plain.claims[0].verdict == report.claims[0].verdict


def test_table2_reads_frozen_mlp_in_log_perplexity(tmp_path: Path):
    summaries = {}
    for run in [*table2.plan("tiny", SEEDS), *table2.beyond("tiny", SEEDS)]:
        value = {"standard": 3.50, "frozen-qk": 3.70, "mixit": 4.20, "frozen-mlp": 3.52}
        summaries[run] = _summary(run, value[run.model] + 0.001 * run.seed, "log_ppl")
    report = table2.report("tiny", SEEDS, summaries, tmp_path, {})
    (row,) = report.results["beyond"]["sotu"]["rows"]
    # 0.02 nats above standard (worse) on every seed, within log perplexity's tolerance, 0.05.
    assert row["model"] == "frozen-mlp" and row["matches"] is True
    assert abs(row["difference"] - 0.02) < 1e-9
