"""`mixit reproduce`: reports, claims, run reuse, parallel jobs, and the paper-scale configs."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.figure
import pytest
import torch
import torch.nn.functional as F

from mixit.cli import main
from mixit.cli import reproduce as reproduce_cli
from mixit.models.adapters import get_variant
from mixit.models.decoder import Decoder
from mixit.paper import EXPERIMENTS, estimate_reproduction, reproduce, table1, throughput
from mixit.paper.claims import CLAIMS, FINDINGS, claim, margin
from mixit.paper.runner import plan_reproduction
from mixit.running.launchers import Launch
from mixit.running.runs import run_dir_name
from mixit.study.claim import (
    NOT_RUN,
)
from mixit.study.compare import compare
from mixit.study.experiment import (
    SCALES,
    Reproduction,
    Run,
)
from mixit.study.pricing import list_schedule
from mixit.study.results import read_results_csv
from mixit.tasks.base import PLATEAU, PLATEAU_KEY
from mixit.training.scoring import correct_rows as rows
from mixit.training.step import make_optimizer
from mixit.training.timing import time_training

TWO_JOBS = Launch(jobs=2)
QUICK = {"train.steps": 4, "train.eval_every": 4, "task.num_pairs": 256, "train.eval_examples": 256}
QUICK |= {"train.batch_size": 32}  # the steps' cost is the batch's; what is tested is not


def summaries_mtimes(out):
    return {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*/summary.json")}


def test_reproduce_writes_reports_and_claims_and_reuses_runs(tmp_path, monkeypatch):
    out, titles = tmp_path / "rep", []
    savefig = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(
        matplotlib.figure.Figure,
        "savefig",
        lambda fig, path, **kw: titles.append(fig.axes[0].get_title()) or savefig(fig, path, **kw),
    )
    claims = reproduce(["table4"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK))
    # The figure names what ran, down to how its learning rates were chosen; long titles wrap.
    assert {" ".join(t.split()) for t in titles} == {
        "Memorization capacity (tiny, seeds 0-1, tuned presets)"
    }
    assert (out / "table4" / "report.md").read_text().startswith("# Table 4")
    results = json.loads((out / "table4" / "results.json").read_text())
    assert len(results["bits_per_param"]["mixit"]) == 2  # one value per seed
    assert results["overrides"] == {PLATEAU_KEY: PLATEAU} | QUICK and results["seeds"] == 2
    assert "Every run trained with `train.steps=4`" in (out / "table4" / "report.md").read_text()
    assert (out / "table4" / "bits_per_param.png").stat().st_size > 10_000
    stored = json.loads((out / "claims.json").read_text())["claims"]
    assert [c["id"] for c in stored] == [c.id for c in CLAIMS]
    verdicts = {c.id: c.verdict for c in claims}
    assert verdicts["C6"] != NOT_RUN and verdicts["C1"] == NOT_RUN
    assert "C6" in (out / "claims.md").read_text()
    finished = summaries_mtimes(out)
    assert len(finished) == 8  # 4 models x 2 seeds
    c6 = next(c for c in stored if c["id"] == "C6")
    assert c6["runs"] == sorted(path.parent.name for path in finished)  # what it read, by name
    timing = json.loads((out / "timing.json").read_text())
    assert timing["table4"]["runs"] == 8 and timing["table4"]["train_seconds"] > 0

    reproduce(["table4"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK))
    assert summaries_mtimes(out) == finished  # nothing retrained
    again = json.loads((out / "timing.json").read_text())
    assert again["runs_trained"] == 0
    assert [call["runs_trained"] for call in again["calls"]] == [8, 0]
    assert again["calls"][1] | {"train_wall_seconds": 0} == {
        "train_wall_seconds": 0,
        "jobs": 1,
        "runs_trained": 0,
        "experiments": ["table4"],
        "scale": "tiny",
        "seeds": 2,
    }
    assert again["calls"][0]["train_wall_seconds"] == timing["train_wall_seconds"]

    monkeypatch.setattr(throughput, "ROUNDS", 2)  # another experiment, same setting: C6 is kept
    monkeypatch.setattr(throughput, "WARMUP", 0)
    reproduce(["throughput"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK))
    merged = {c["id"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert (
        merged["C6"] == next(c for c in stored if c["id"] == "C6")
        and merged["C11"]["verdict"] != NOT_RUN
    )
    # other seeds
    reproduce(["throughput"], Reproduction("tiny", seeds=1, out=out, overrides=QUICK))
    merged = {c["id"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert merged["C6"]["verdict"] == NOT_RUN


def test_claims_md_holds_one_setting_and_damaged_outputs_are_rebuilt(tmp_path, monkeypatch):
    out = tmp_path / "rep"
    monkeypatch.setattr(throughput, "ROUNDS", 2)
    monkeypatch.setattr(throughput, "WARMUP", 0)
    reproduce(["throughput"], Reproduction("tiny", seeds=1, out=out))
    reproduce(["table4"], Reproduction("small", seeds=1, out=out, overrides=QUICK))
    stored = json.loads((out / "claims.json").read_text())
    verdicts = {c["id"]: c["verdict"] for c in stored["claims"]}
    assert stored["scale"] == "small" and verdicts["C6"] != NOT_RUN
    assert verdicts["C11"] == NOT_RUN  # judged at tiny: not carried into small's claims
    header = (out / "claims.md").read_text().split("## C1")[0]
    assert "`small` scale" in header and "over 1 seed." in header and "`train.steps=4`" in header
    c6 = next(c for c in stored["claims"] if c["id"] == "C6")
    assert c6["construction"] == "equations"
    assert "`equations` construction" in (out / "table4" / "report.md").read_text()
    assert "- **Construction:** `equations`" in (out / "claims.md").read_text()

    finished = summaries_mtimes(out)
    damaged = next(iter(finished))
    damaged.write_text('{"task": "memoriz')
    (out / "claims.json").write_text("[1, 2")
    (out / "throughput" / "measurements.json").write_text("{")
    reproduce(["table4", "throughput"], Reproduction("small", seeds=1, out=out, overrides=QUICK))
    after = summaries_mtimes(out)
    assert after[damaged] != finished[damaged]  # trained again
    assert all(after[p] == finished[p] for p in finished if p != damaged)
    assert json.loads(damaged.read_text())["task"] == "memorization"


def test_an_interrupted_reproduction_trains_only_what_is_missing(tmp_path):
    out = tmp_path / "rep"
    reproduce(["table4"], Reproduction("tiny", seeds=1, out=out, overrides=QUICK, launch=TWO_JOBS))
    finished = summaries_mtimes(out)
    victim = next(iter(finished))
    victim.unlink()  # as if killed before its summary was written
    reproduce(["table4"], Reproduction("tiny", seeds=1, out=out, overrides=QUICK, launch=TWO_JOBS))
    after = summaries_mtimes(out)
    assert set(after) == set(finished)
    assert [p for p in after if after[p] != finished[p]] == [victim]


def test_run_directory_name_follows_the_config():
    a = Run("addition", "mixit", 0).config("tiny")
    b = Run("addition", "mixit", 0, (("train.steps", 5),)).config("tiny")
    assert run_dir_name(a) == run_dir_name(Run("addition", "mixit", 0).config("tiny"))
    assert run_dir_name(a) != run_dir_name(b)
    assert run_dir_name(a).startswith("addition-mixit-s0-")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["reproduce", "table99"], "unknown experiment 'table99'"),
        (["reproduce", "all", "--scale", "huge"], "--scale 'huge'"),
        (
            ["reproduce", "all", "--seeds", "0"],
            "argument --seeds: expected a whole number >= 1 or auto",
        ),
        (["reproduce", "table4", "model.nope=1"], "nope"),
    ],
)
def test_bad_reproduce_input_exits_2(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x" / "claims.json").exists()


# Table 9 of the paper: MixiT's selected hyperparameters (layers, width, heads, lr, batch).
# Memorization trains at lr 0.005, the value appendix C gives for the Table 4 comparison.
TABLE9 = {
    "addition": (8, 512, 64, 1e-3, 128),
    "dyck": (4, 512, 64, 1e-3, 512),
    "modular-addition": (2, 512, 32, 1e-3, 256),
    "retrieval": (2, 1024, 4, 1e-4, 1024),
    "khop": (5, 512, 8, 1e-4, 128),
    "memorization": (2, 1024, 4, 5e-3, 256),
    "sentiment": (4, 1024, 16, 5e-4, 256),
    "lm": (12, 512, 8, 5e-4, 512),
}


@pytest.mark.parametrize("task", list(TABLE9))
def test_paper_scale_matches_table9(task):
    config = Run(task, "mixit", 0).config("paper")
    model, train = config.model, config.train
    assert (model.n_layer, model.n_embd, model.n_head, train.lr, train.batch_size) == TABLE9[task]


@pytest.mark.parametrize("task", list(TABLE9))
def test_paper_scale_builds_the_authors_construction(task):
    model = Run(task, "mixit", 0).config("paper").model
    assert model.construction == "authors"
    assert (model.mixing_scale, model.sink_first_row_weight) == ("per-head-spread", 0.5)
    assert model.width_scaling and model.bias and model.activation_gain
    standard = Run(task, "standard", 0).config("paper").model
    assert standard.construction == "authors" and standard.bias and standard.init == "gpt2"


def test_every_paper_scale_run_records_its_construction():
    for experiment in EXPERIMENTS.values():
        for run in experiment.plan("paper", range(1)):
            assert run.config("paper").model.construction == "authors", run


def paper_scale_models() -> list:
    """Each distinct (variant, model config) of `reproduce all --scale paper`."""
    distinct = {}
    for experiment in EXPERIMENTS.values():
        for run in experiment.plan("paper", range(1)):
            config = run.config("paper")
            config = config.with_model(
                vocab_size=config.model.vocab_size or 512,
                block_size=config.model.block_size or 64,
            )
            distinct[json.dumps([config.variant, vars(config.model)], sort_keys=True)] = config
    return list(distinct.values())


def test_every_paper_scale_model_builds_and_runs_on_the_meta_device():
    """Shapes, buffers and parameter groups of all paper-scale models, without memory."""
    configs = paper_scale_models()
    assert len(configs) >= 20
    for config in configs:
        with torch.device("meta"):
            model = Decoder(config.model, get_variant(config.variant))
            logits = model(torch.zeros(2, 8, dtype=torch.long))
        assert logits.shape == (2, 8, config.model.vocab_size)
        frozen = {n for n, g in model.param_groups().items() if g and not g[0].requires_grad}
        assert frozen == set(get_variant(config.variant).frozen)


@pytest.mark.slow
def test_every_paper_scale_model_takes_training_steps():
    """Two real optimizer steps of each paper-scale model on a short random batch (the full
    runs need GPUs and the hub's datasets). About 1 billion parameters in all: `make
    test-slow`."""
    for config in paper_scale_models():
        torch.manual_seed(0)
        model = Decoder(config.model, get_variant(config.variant))
        optimizer = make_optimizer(model, config)
        ids = torch.randint(0, config.model.vocab_size, (1, 9))
        for _ in range(2):
            loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        assert torch.isfinite(loss)


def test_tuned_hyperparameters_come_under_the_experiments_own(tmp_path):
    best = tmp_path / "best.json"
    tuned = {"model.n_layer": 3, "model.n_head": 2}
    best.write_text(json.dumps([{"task": "addition", "model": "mixit", "overrides": tuned}]))
    from mixit.tuning.sweep import read_best

    run = Run("addition", "mixit", 0, (("model.n_head", 8),))
    config = run.config("tiny", None, read_best(best))
    assert (config.model.n_layer, config.model.n_head) == (3, 8)
    assert Run("addition", "standard", 0).config("tiny", None, read_best(best)).model.n_layer == 2
    argv = ["reproduce", "table4", "--tuned", str(tmp_path / "nope.json")]
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2


def test_no_train_reports_only_finished_experiments(tmp_path):
    out = tmp_path / "rep"
    # An output with nothing in it has nothing to report: refused, nothing written (#103).
    assert main(["reproduce", "table4", "--no-train", "--seeds", "1", "--out", str(out)]) == 2
    assert not out.exists()
    reproduce(["table4"], Reproduction("tiny", seeds=1, out=out, overrides=QUICK))
    trained = summaries_mtimes(out)
    shutil.rmtree(next((out / "runs").iterdir()))
    quick = [f"{k}={v}" for k, v in QUICK.items()]
    argv = ["reproduce", "table4", "--no-train", "--seeds", "1", "--seed", "0", "--out", str(out)]
    argv += quick
    assert main(argv) == 0  # judged again from its results.json, nothing trained
    assert "Not reported yet" not in (out / "table4" / "report.md").read_text()
    assert len(summaries_mtimes(out)) == len(trained) - 1


def test_estimate_times_what_would_train_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "rep"
    reproduce(["table4"], Reproduction("tiny", seeds=1, out=out, overrides=QUICK))
    finished = summaries_mtimes(out)
    guess = estimate_reproduction(
        ["table4"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK, launch=TWO_JOBS)
    )
    assert guess["runs_to_train"] == 4  # seed 1 of the four models; seed 0 is finished
    assert guess["configs_timed"] == 4 and guess["experiments"]["table4"]["runs"] == 8
    assert 0 < guess["wall_seconds"] <= guess["train_seconds"]
    assert summaries_mtimes(out) == finished
    argv = ["reproduce", "table4", "--estimate", "--seeds", "1", "--out", str(tmp_path / "new")]
    assert main([*argv, *(f"{k}={v}" for k, v in QUICK.items())]) == 0
    assert "| table4 | 4 | 4 |" in capsys.readouterr().out
    assert not (tmp_path / "new").exists()


def test_run_estimate_adds_up_its_measured_parts():
    config = Run("memorization", "mixit", 0, tuple(QUICK.items())).config("tiny")
    config = config.with_train(steps=10, eval_every=4)  # three evaluations
    t = time_training(config, steps=2, warmup=1)
    parts = t["data_seconds"] + 10 * t["step_seconds"] + 3 * t["eval_seconds"]
    parts += t["last_pass_seconds"]  # the train accuracy's pass, at the last evaluation only
    assert min(v for k, v in t.items() if k != "last_pass_seconds") > 0
    assert t["run_seconds"] == pytest.approx(parts)


def test_runs_go_to_whichever_worker_is_free_first():
    assert list_schedule([3, 1, 1, 1], jobs=2) == 3
    assert list_schedule([2, 2, 2], jobs=2) == 4
    assert list_schedule([2, 2, 2], jobs=1) == 6


@pytest.mark.parametrize("scale", SCALES)
def test_every_experiment_plans_valid_runs_at_every_scale(scale):
    experiments, configs = plan_reproduction(["all"], Reproduction(scale, seeds=1))
    assert len(experiments) == len(EXPERIMENTS) and len(configs) > 50


def test_small_scale_trains_the_tiny_models_without_tiny_cuts():
    # The scales' own settings, under the task presets' rates and steps: each scale's tuned
    # presets (tuned/SCALE.json) then move those per group.
    _, tiny = plan_reproduction(["all"], Reproduction("tiny", seeds=1, presets=False))
    _, small = plan_reproduction(["all"], Reproduction("small", seeds=1, presets=False))
    tiny_names = {run_dir_name(c) for c in tiny.values()}
    small_configs = {run_dir_name(c): c for c in small.values()}
    # Runs tiny trains at their presets' budgets are the very same runs at small ...
    addition = [n for n in small_configs if n.startswith("addition-standard")]
    assert addition and set(addition) <= tiny_names
    # ... while tasks tiny cuts train their full presets, and k-hop gets the paper's 5 layers
    # and 5,000 steps (appendix C).
    for name, config in small_configs.items():
        assert config.preset == "tiny"
        if config.task_name == "khop":
            assert name not in tiny_names
            assert (config.model.n_layer, config.train.steps) == (5, 5000)


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_when_reproduce_is_killed(tmp_path, alive):
    script = (
        "import os, time\n"
        "from mixit.running.workers import worker_pool\n"
        "pool = worker_pool(1)\n"
        "print(pool.submit(os.getpid).result(), flush=True)\n"
        "pool.submit(time.sleep, 120)\n"
        "time.sleep(0.5)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    printed = tmp_path / "stdout"
    with printed.open("w") as stdout:  # a file, not a pipe a surviving worker would hold open
        subprocess.run([sys.executable, "-c", script], stdout=stdout, timeout=60)
    worker = int(printed.read_text().split()[0])
    deadline = time.monotonic() + 10
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(worker)


@pytest.mark.processes
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_stops_reproduce_and_its_workers_at_once(
    tmp_path, alive, children, session, cpu_only
):
    out = tmp_path / "rep"
    command = [sys.executable, "-m", "mixit", "reproduce", "table4", "--jobs", "2", "--no-progress"]
    command += ["--out", str(out), "train.steps=100000", "task.num_pairs=256"]
    with (tmp_path / "stderr").open("w") as stderr:
        reproduction = session(command, stderr=stderr)
        deadline = time.monotonic() + 120
        while len(list(out.glob("runs/*/config.json"))) < 2:  # both workers are training
            assert time.monotonic() < deadline and reproduction.poll() is None
            time.sleep(0.1)
        workers = children(reproduction.pid)
        os.killpg(reproduction.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        assert reproduction.wait(timeout=10) == 130
    deadline = time.monotonic() + 10
    while any(map(alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(alive, workers))
    time.sleep(1)  # Python's resource tracker would warn about leaked semaphores by now
    said = (tmp_path / "stderr").read_text().splitlines()
    assert said == ["mixit: interrupted; the same command goes on from the finished runs"]
    assert not list(out.glob("runs/*/summary.json"))  # nothing half-trained counts as finished


def test_claims_read_each_run_at_its_best_held_out_point(tmp_path, monkeypatch):
    """Planted: every run's best held-out evaluation scored 0.125; the claims read that, and
    results.csv keeps each run's last evaluation."""
    from mixit.tuning import rules

    monkeypatch.setattr(
        rules, "best_held_out_record", lambda run_dir, config: {"step": 1, "test_accuracy": 0.125}
    )
    out = tmp_path / "rep"
    few = {"train.steps": 2, "train.eval_every": 2, "task.n_train": 512, "task.n_test": 200}
    reproduce(["table1"], Reproduction("tiny", seeds=1, out=out, overrides=few, presets=False))
    claims = {c["id"]: c for c in json.loads((out / "claims.json").read_text())["claims"]}
    assert set(claims["C1"]["measured"].values()) == {0.125}
    assert {float(row["value"]) for row in read_results_csv(out / "results.csv")} != {0.125}


GOLDEN = Path(__file__).parents[1] / "fixtures" / "table1-tiny"


def test_table1_reports_k_hop_accuracy_by_number_of_hops(tmp_path, cpu_only, monkeypatch):
    out = tmp_path / "rep"
    few = {"train.steps": 2, "train.eval_every": 2, "task.n_train": 512, "task.n_test": 200}
    # The golden files are of the task presets' rates, not the tuned presets', and of runs
    # before the plateau rule, which holds training rows out for the stop rule to read.
    few["train.plateau"] = 0.0
    reproduce(["table1"], Reproduction("tiny", seeds=1, out=out, overrides=few, presets=False))
    # The same files, byte for byte, as the code wrote before the runs layer was refactored
    # (89e292f), the claims since their rules read seed by seed (#69): a change to a report or
    # to the numbers shows here.
    for name in ("table1/report.md", "table1/results.json", "claims.json", "claims.md"):
        assert (out / name).read_text() == (GOLDEN / Path(name).name).read_text(), name
    hops = json.loads((out / "table1" / "results.json").read_text())["khop_by_hops"]
    assert sorted(hops) == sorted(["standard", "frozen-mlp", "frozen-qk", "mixit"])
    assert all(len(per_seed) == 1 and len(per_seed[0]) == 4 for per_seed in hops.values())
    assert all(0 <= a <= 1 for per_seed in hops.values() for a in per_seed[0] if a is not None)
    assert "| model | k=1 | k=2 | k=3 | k=4 |" in (out / "table1" / "report.md").read_text()
    assert len(read_results_csv(out / "results.csv")) == 8  # one row per run
    # Each summary records them at training time: the report scored no weights.
    scored = []
    monkeypatch.setattr(table1, "correct_rows", lambda *a, **k: scored.append(1) or rows(*a, **k))
    weights = next((out / "runs").glob("khop-mixit-*/model.safetensors"))
    summary = json.loads((weights.parent / "summary.json").read_text())
    assert table1.recorded_hops({**summary, "run_dir": None}) == hops["mixit"][0]
    # A run whose summary predates them is scored from its weights, the same numbers, once
    # per weights file: weights written again (a run trained again) are scored again.
    assert table1.by_hops(str(weights.parent)) == hops["mixit"][0] and len(scored) == 1
    assert table1.by_hops(str(weights.parent)) == hops["mixit"][0] and len(scored) == 1
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1))
    assert table1.by_hops(str(weights.parent)) == hops["mixit"][0] and len(scored) == 2
    # A record of the runs without their weights (their configs and summaries, as the ablation
    # commits them) reports the same verdicts and, from the summaries, the same by-hops table.
    record = tmp_path / "record"
    for run in (out / "runs").iterdir():
        (record / "runs" / run.name).mkdir(parents=True)
        for name in ("config.json", "summary.json"):
            shutil.copy(run / name, record / "runs" / run.name / name)
    untuned = Reproduction("tiny", seeds=1, out=record, overrides=few, presets=False)
    reproduce(["table1"], untuned, False)
    verdicts = [
        {c["id"]: c["verdict"] for c in json.loads((d / "claims.json").read_text())["claims"]}
        for d in (out, record)
    ]
    assert verdicts[0] == verdicts[1] and verdicts[0]["C1"] != "not run"
    report = (record / "table1" / "report.md").read_text()
    assert "Not reported yet" not in report and "not measured" not in report
    by_hops = [json.loads((d / "table1" / "results.json").read_text()) for d in (out, record)]
    assert by_hops[0]["khop_by_hops"] == by_hops[1]["khop_by_hops"] == hops


def test_seed_starts_the_seeds_and_claims_say_which_confirm(tmp_path):
    out = tmp_path / "rep"
    reproduce(["table4"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK, first_seed=100))
    seeds = {json.loads(p.read_text())["seed"] for p in (out / "runs").glob("*/summary.json")}
    assert seeds == {100, 101}
    stored = json.loads((out / "claims.json").read_text())
    assert stored["tuned_on_seeds"] == [0, 1, 2] and stored["confirmed_on_seeds"] == [100, 101]
    assert "confirmation on seeds [100, 101]" in (out / "claims.md").read_text()
    assert "2 seeds (100-101)" in (out / "table4" / "report.md").read_text()
    c6_fresh = {c["id"]: c for c in stored["claims"]}["C6"]["verdict"]
    # the tuning seeds again
    reproduce(["table4"], Reproduction("tiny", seeds=2, out=out, overrides=QUICK))
    stored = json.loads((out / "claims.json").read_text())
    claims_md = (out / "claims.md").read_text()
    assert stored["confirmed_on_seeds"] == [] and "confirm nothing" in claims_md
    c6 = {c["id"]: c for c in stored["claims"]}["C6"]
    assert c6["by_seeds"] == {"100-101": c6_fresh, "0-1": c6["verdict"]}  # both kept
    confirmed = {
        "reproduced": "confirmed",
        # Memorization's tuned groups reached the budget cap still rising.
        "inconclusive": "inconclusive on the fresh seeds, so not confirmed",
    }.get(c6_fresh, "not confirmed")
    assert f"0-1 {c6['verdict']}; {confirmed}" in claims_md


def test_reproduce_starts_on_seeds_nothing_was_tuned_on_and_prints_only_what_ran(tmp_path, capsys):
    quick = [f"{key}={value}" for key, value in QUICK.items()]
    out = tmp_path / "rep"
    assert main(["reproduce", "table4", "--seeds", "1", "--out", str(out), *quick]) == 0
    seeds = {json.loads(p.read_text())["seed"] for p in (out / "runs").glob("*/summary.json")}
    assert seeds == {100}
    said = capsys.readouterr()
    assert [line.split()[0] for line in said.out.splitlines()] == ["C6"]  # table4's claim only
    assert "seeds 100-100: nothing was tuned on them, so these verdicts confirm" in said.err
    headline = (out / "claims.md").read_text().splitlines()[2]  # C6 may go either way
    assert re.match(r"[01] of 1 claims run reproduced \(of the 12: 11 not run\), ", headline)
    seen = Reproduction("tiny", seeds=3, first_seed=0)
    assert "confirm nothing" in reproduce_cli._seeds_note(seen)


def test_a_negative_first_seed_is_a_usage_error(tmp_path, capsys):
    assert main(["reproduce", "table4", "--seed", "-1", "--out", str(tmp_path / "r")]) == 2
    assert "--seed must be in [0" in capsys.readouterr().err


def test_each_rule_states_every_margin_its_experiment_compares():
    for finding in FINDINGS:
        for name in finding.rule.margins:
            assert "{" + name in finding.rule.template, (finding.id, name)  # none is silent
    assert f"standard's - {margin('C5'):.2f};" in claim("C5").rule


def test_compare_and_reproduce_on_one_output_train_each_run_once(tmp_path):
    out = tmp_path / "both"
    quick = {"train.steps": 4, "train.eval_every": 4, "train.eval_examples": 64}
    quick |= {"task.n_train": 512, "task.n_test": 64}
    compare("retrieval", ["standard", "mixit"], seeds=2, out=out, overrides=quick)
    by_compare = summaries_mtimes(out)
    assert len(by_compare) == 4
    # compare trains at the task presets' rates: so does this reproduction, to share its runs
    reproduce(["table1"], Reproduction("tiny", seeds=2, out=out, overrides=quick, presets=False))
    after = summaries_mtimes(out)
    assert {run: after[run] for run in by_compare} == by_compare  # read back, not retrained
    assert len(after) == 16  # 2 tasks x 4 models x 2 seeds
    assert json.loads((out / "timing.json").read_text())["calls"][-1]["runs_trained"] == 12
    compare("retrieval", ["frozen-qk", "frozen-mlp"], seeds=2, out=out, overrides=quick)
    assert summaries_mtimes(out) == after  # and the other way round
