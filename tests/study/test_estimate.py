"""What an estimate says beyond its times: the range tuning may add, and a shared machine."""

import subprocess
import sys
import time

import pytest

from mixit.common.cores import busy_cores_elsewhere
from mixit.running.workers import shared_cores_note
from mixit.study.axis import Axis
from mixit.study.estimate import (
    format_axis_estimate,
    format_suite_estimate,
    tuning_estimate_line,
    tuning_seconds,
)
from mixit.study.text import duration
from mixit.tuning.rules import BUDGET_CAP, halving_budgets


def test_tuning_adds_a_range_from_the_grid_to_every_extension_and_doubling():
    rows = [
        {"model": "standard", "runs": 3, "steps": 100, "step_seconds": 0.1, "run_seconds": 10.0}
    ]
    plain = tuning_seconds(rows, {})
    assert plain.least == pytest.approx(10 * halving_budgets(3))
    assert plain.most == pytest.approx(10 * (halving_budgets(5) + 2 + 4 + 3 * (BUDGET_CAP - 1)))
    arch = tuning_seconds(rows, {"model.arch": "hf:llama"})  # each model chooses its init too
    assert arch.least == pytest.approx(10 * halving_budgets(6)) and arch.most > plain.most
    line = tuning_estimate_line(plain)
    assert (
        "about 18 s one run after another from the grid alone, each trial stopping as early as "
        "its stop rule allows (about what the committed tuned suites spent in all, "
        f"docs/cost.md), up to {duration(plain.most)}" in line
    )
    estimate = {"task": "t", "preset": "tiny", "device": "here", "rows": rows, "jobs": 1}
    estimate |= {"total_seconds": 30.0, "wall_seconds": 30.0}
    total = format_suite_estimate([estimate, estimate], [plain, plain]).splitlines()[-2:]
    both = f"{duration(2 * plain.least)} to {duration(2 * plain.most)}"
    assert total[0].endswith(f"plus {both} of tuning one run after another")
    everything = f"{duration(60 + 2 * plain.least)} to {duration(60 + 2 * plain.most)}"
    assert total[1].startswith(f"in all, {everything} of training one run after another")


def test_a_run_that_may_stop_early_lowers_the_least_cost_to_its_first_evaluation():
    from mixit.config.schema import TrainConfig
    from mixit.study.pricing import earliest_stop

    assert earliest_stop(TrainConfig(steps=1000, eval_every=100)) == 1000
    assert earliest_stop(TrainConfig(steps=1000, eval_every=100, stop_at=0.99)) == 100
    assert earliest_stop(TrainConfig(steps=1000, eval_every=100, patience=3)) == 400
    assert earliest_stop(TrainConfig(steps=50, eval_every=100, stop_at=0.99)) == 50
    rows = [{"model": "m", "runs": 3, "steps": 1000, "step_seconds": 0.01, "run_seconds": 10.0}]
    rows[0]["least_run_seconds"] = 1.0
    assert tuning_seconds(rows, {}).least == pytest.approx(halving_budgets(3))
    estimate = {"task": "t", "preset": "tiny", "device": "here", "rows": rows, "jobs": 1}
    estimate |= {"total_seconds": 30.0, "wall_seconds": 30.0, "least_seconds": 3.0}
    text = format_suite_estimate([estimate])
    assert "as little as 3 s of training if every run with a stop rule stops" in text
    assert text.splitlines()[-1].startswith("in all, 3 s to 30 s of training")


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/stat")
def test_a_busy_neighbour_is_seen_and_said():
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        busy = busy_cores_elsewhere(interval=1.0)
    finally:
        spin.kill()
        spin.wait()
    assert busy is not None and busy >= 0.5
    assert "other processes keep about" in shared_cores_note(busy)
    assert shared_cores_note(0.1) == "" and shared_cores_note(None) == ""


def test_the_llama_suites_estimate_holds_what_the_suite_cost():
    """The committed estimate's range in all against the training seconds the committed tuned
    suite logged (results/suite-llama-estimate/README.md)."""
    import re
    from pathlib import Path

    results = Path(__file__).resolve().parents[2] / "results"
    last = (results / "suite-llama-estimate" / "estimate.txt").read_text().strip().splitlines()
    least, most = re.match(r"in all, ([\d.]+) h to ([\d.]+) h of training", last[-1]).groups()
    summary = (results / "suite-llama-tuned" / "summary.md").read_text()
    logged = re.search(r"^\| all \| \d+ \| ([\d,]+) \|", summary, re.M).group(1)
    hours = int(logged.replace(",", "")) / 3600
    assert float(least) <= hours <= float(most)


def test_an_axis_estimate_adds_its_values_and_says_where_auto_may_stop_sooner():
    rows = [{"model": "m", "runs": 3, "steps": 100, "step_seconds": 0.1, "run_seconds": 10.0}]
    estimates = [
        {"task": "t", "preset": "tiny", "device": "here", "rows": rows, "jobs": 1, "point": p}
        | {"total_seconds": 30.0, "wall_seconds": 30.0}
        for p in ("task.size=10", "task.size=20")
    ]
    text = format_axis_estimate(Axis("task.size", (10, 20), True), estimates)
    assert "task: t at task.size=20 (preset tiny)" in text
    assert "axis task.size: 2 values, about 60 s of wall time" in text
    assert text.endswith(
        "where the models separate (--axis auto) or where the reference does not learn"
    )
    listed = format_axis_estimate(Axis("task.size", (10, 20)), estimates)
    assert "(--axis auto)" not in listed


def test_the_shared_cores_factor_is_the_committed_fit_and_passes_its_held_out_rule():
    """docs/cost.md, "Estimates against the committed records": the factor is the fit set's
    ratio, and on the held-out set the ratio with it lies within 0.87-1.15, nearer 1."""
    import json
    import math
    from pathlib import Path

    from mixit.study.pricing import SHARED_STEP_FACTOR

    results = Path(__file__).resolve().parents[2] / "results"
    sets = json.loads((results / "estimate-calibration" / "tiny.json").read_text())["sets"]
    assert round(sets["tiny-rules-seed300"]["ratio"], 2) == SHARED_STEP_FACTOR
    held_out = sets["tiny-rules-seed0"]["ratio"]
    assert 0.87 <= held_out / SHARED_STEP_FACTOR <= 1.15
    assert abs(math.log(held_out / SHARED_STEP_FACTOR)) < abs(math.log(held_out))


def test_runs_sharing_the_cpu_cores_are_priced_at_the_factor_and_one_run_alone_is_not(
    monkeypatch,
):
    import dataclasses

    from mixit.study import pricing as estimate
    from mixit.training.resolve import resolve_config

    config = resolve_config("retrieval", "standard", "tiny", 0, {"train.device": "cpu"})
    steps = config.train.steps
    timed = {"data_seconds": 1.0, "step_seconds": 0.01, "run_seconds": 1.0 + 0.01 * steps}

    def pending(configs, runs_dir, jobs, progress):  # seeds share one timing, as here
        return {estimate.run_dir_name(c): timed for c in configs.values()}

    monkeypatch.setattr(estimate, "pending_timings", pending)
    monkeypatch.setattr(estimate, "parallel_jobs", lambda jobs: jobs)
    other_seed = dataclasses.replace(config, seed=1)
    alone = estimate.plan_timings({"a": config}, None, None, 1)
    shared = estimate.plan_timings({"a": config, "b": other_seed}, None, None, 2)
    name = estimate.run_dir_name(config)
    assert alone[name] is timed
    assert shared[name] is shared[estimate.run_dir_name(other_seed)]  # still timed once
    assert timed["step_seconds"] == 0.01  # the timing itself is left as it was
    factor = estimate.SHARED_STEP_FACTOR
    assert shared[name]["step_seconds"] == pytest.approx(0.01 * factor)
    assert shared[name]["run_seconds"] == pytest.approx(1.0 + 0.01 * factor * steps)
