"""The trainer: loss goes down for every variant, run directories, determinism, divergence."""

import dataclasses
import json
import math
import random
import re
import shutil
import sys

import pytest
import torch

from mixit import load_run, train
from mixit.cli import main
from mixit.common.errors import TrainingDiverged, UsageError
from mixit.config.overrides import with_settings
from mixit.config.schema import TrainConfig
from mixit.models.variants import VARIANTS
from mixit.running.runs import run_dir_name
from mixit.tasks import get_task
from mixit.training.resolve import fit_model_to_data, resolve_config
from mixit.training.step import lr_factor
from mixit.training.train import run

# A retrieval problem small enough to train in about a second.
MICRO = {
    "task.vocab_size": 16,
    "task.max_pairs": 3,
    "task.n_train": 512,
    "task.n_test": 128,
    "model.n_embd": 32,
    "model.n_head": 2,
    "model.n_layer": 1,
    "train.batch_size": 32,
    "train.warmup_steps": 5,
    "train.eval_examples": 128,
}


def micro_train(model, steps, tmp_path=None, seed=0, **extra):
    overrides = MICRO | {"train.steps": steps, "train.eval_every": steps} | extra
    out = None if tmp_path is None else tmp_path / f"{model}-{steps}-{seed}"
    return train("retrieval", model, "tiny", seed, out, overrides, progress=False)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_training_lowers_the_loss(name):
    before = micro_train(name, 1)["metrics"]["test_loss"]
    after = micro_train(name, 60)["metrics"]["test_loss"]
    assert after < before - 0.1, (before, after)


def test_run_directory_holds_the_contract_files(tmp_path):
    summary = micro_train("mixit", 10, tmp_path)
    run_dir = tmp_path / "mixit-10-0"
    assert {p.name for p in run_dir.iterdir()} >= {
        "config.json",
        "metrics.jsonl",
        "summary.json",
        "model.safetensors",
    }
    stored = json.loads((run_dir / "summary.json").read_text())
    assert stored == json.loads(json.dumps(summary))
    for key in ("task", "model", "seed", "preset", "steps", "params_total", "params_trainable"):
        assert key in stored
    assert {"test_loss", "test_accuracy", "train_accuracy"} <= set(stored["metrics"])
    assert 0.0 <= stored["metrics"]["test_accuracy"] <= 1.0
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [10]


def test_load_run_restores_identical_logits_and_mixing_buffers(tmp_path):
    micro_train("mixit", 10, tmp_path)
    model, config = load_run(tmp_path / "mixit-10-0")
    again, _ = load_run(tmp_path / "mixit-10-0")
    assert config.variant == "mixit" and config.model.block_size == 7
    for a, b in zip(model.blocks, again.blocks, strict=True):
        assert torch.equal(a.attn.mixing, b.attn.mixing)
    tokens = torch.randint(0, config.model.vocab_size, (3, 7))
    with torch.no_grad():
        assert torch.equal(model(tokens), again(tokens))


def test_a_run_leaves_its_callers_config_and_run_name_as_they_were():
    config = resolve_config("retrieval", "mixit", "tiny", 0, MICRO | {"train.steps": 2})
    before = (config.to_dict(), run_dir_name(config))
    run(config, progress=False)
    assert (config.to_dict(), run_dir_name(config)) == before


def test_same_seed_gives_the_same_numbers():
    first = micro_train("frozen-qk", 20, seed=3)["metrics"]
    second = micro_train("frozen-qk", 20, seed=3)["metrics"]
    other = micro_train("frozen-qk", 20, seed=4)["metrics"]
    assert first == second
    assert first != other


@pytest.mark.parametrize("model", ["standard", "mixit"])
def test_micro_batches_take_the_whole_batchs_step(model, tmp_path, cpu_only):
    # Targets of 1 to 6 tokens and a batch of 30 in 4 uneven pieces: a piece's mean loss is
    # not the batch's, so only the whole batch's normalisation passes.
    rng = random.Random(0)
    lines = []
    for _ in range(200):
        word = "".join(rng.choice("abcdef") for _ in range(rng.randint(1, 6)))
        lines.append(json.dumps({"input": word, "target": word[::-1]}) + "\n")
    (tmp_path / "data.jsonl").write_text("".join(lines))
    data = {"task.data_files": f"{tmp_path / 'data.jsonl'},{tmp_path / 'data.jsonl'}"}
    data |= {"train.steps": 10, "train.eval_every": 10, "train.batch_size": 30}
    whole = train("custom", model, "tiny", 0, None, data, progress=False)["metrics"]
    split = data | {"train.micro_batches": 4}
    pieces = train("custom", model, "tiny", 0, None, split, progress=False)["metrics"]
    assert pieces.keys() == whole.keys() and "test_loss" in whole
    for name in whole:
        assert pieces[name] == pytest.approx(whole[name], abs=1e-5)
    # How a step is split is not part of a run's identity, as the device is not.
    assert run_dir_name(resolve_config("custom", model, "tiny", 0, split)) == run_dir_name(
        resolve_config("custom", model, "tiny", 0, data)
    )


def test_nan_loss_stops_the_run_naming_the_step(tmp_path):
    # An absurd learning rate sends the weights to infinity within a step or two.
    with pytest.raises(TrainingDiverged, match=r"loss is nan at step [1-9]"):
        micro_train("standard", 20, tmp_path, **{"train.lr": 1e30, "train.warmup_steps": 0})
    assert not (tmp_path / "standard-20-0" / "summary.json").exists()


def test_a_finite_loss_that_blows_up_stops_the_run_naming_the_step(tmp_path, capsys):
    """train.lr=100 on tiny retrieval keeps the loss finite (about 4 to 71,196 by step 10): it
    stops at the blow-up rule, exit 1 naming the step, with no summary to read as a verdict."""
    argv = ["train", "--task", "retrieval", "--model", "standard", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "run"), "train.lr=100"]) == 1
    assert re.search(
        r"the running loss is .* at step \d+, over 100 times its first", capsys.readouterr().err
    )
    assert not (tmp_path / "run" / "summary.json").exists()


def test_schedule_warms_up_then_decays_to_the_floor():
    config = resolve_config("retrieval", "standard", "tiny", 0)
    config = dataclasses.replace(
        config, train=TrainConfig(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    )
    assert lr_factor(0, config) == pytest.approx(0.1)
    assert lr_factor(9, config) == pytest.approx(1.0)
    assert lr_factor(10, config) == pytest.approx(1.0)
    assert lr_factor(100, config) == pytest.approx(0.1)


def test_tensorboard_events_hold_the_logged_metrics(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    overrides = {"train.steps": 6, "train.eval_every": 3, "model.n_embd": 32}
    train("addition", "mixit", out=tmp_path, overrides=overrides, progress=False)
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"train_loss", "test_accuracy", "lr", "grad_norm", "tokens_per_second"} <= tags
    assert [e.step for e in events.Scalars("train_loss")] == [3, 6]


def test_wandb_without_the_package_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(UsageError, match="pip install wandb"):
        train("addition", "mixit", out=tmp_path, overrides={"train.wandb": "proj"})


def test_bf16_trains_and_keeps_earlier_run_identities(tmp_path):
    overrides = {"train.steps": 2, "model.n_embd": 32, "task.n_test": 64, "task.n_train": 256}
    summary = train("addition", "mixit", overrides={**overrides, "train.precision": "bf16"})
    assert math.isfinite(summary["metrics"]["test_loss"])
    from mixit.training.resolve import resolve_config

    fp32 = resolve_config("addition", "mixit", "tiny", 0, overrides).result_dict()
    assert "precision" not in fp32["train"]  # identities of runs made before the setting
    bf16 = resolve_config("addition", "mixit", "tiny", 0, {**overrides, "train.precision": "bf16"})
    assert bf16.result_dict()["train"]["precision"] == "bf16"
    with pytest.raises(UsageError, match=r"train\.precision"):
        resolve_config("addition", "mixit", "tiny", 0, {"train.precision": "fp8"})


@pytest.mark.slow  # torch.compile takes 10-40 s on a CPU
def test_compile_trains_to_the_eager_metrics():
    overrides = {"train.steps": 3, "model.n_embd": 32, "task.n_test": 64, "task.n_train": 256}
    eager = train("addition", "standard", overrides=overrides)["metrics"]
    compiled = train("addition", "standard", overrides={**overrides, "train.compile": True})
    assert compiled["metrics"]["test_loss"] == pytest.approx(eager["test_loss"], rel=1e-4)
    from mixit.training.resolve import resolve_config

    assert (
        "compile" not in resolve_config("addition", "mixit", "tiny", 0, {}).result_dict()["train"]
    )


@pytest.mark.slow  # two compilations
def test_each_compiled_run_compiles_afresh(monkeypatch):
    """A worker trains many shapes in turn: each run compiles its own graph, even past torch's
    limit of compiled versions per function (1 here), instead of quietly running eager."""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 1)
    overrides = {"train.steps": 2, "task.n_test": 64, "task.n_train": 256, "train.compile": True}
    for width in (32, 48):
        graphs = counters["stats"]["unique_graphs"]
        train("addition", "standard", overrides={**overrides, "model.n_embd": width})
        assert counters["stats"]["unique_graphs"] > graphs


BF16_CHECK = {
    "train.steps": 4,
    "train.eval_every": 2,
    "train.checkpoint_every": 2,
    "model.n_embd": 32,
    "task.n_test": 64,
    "task.n_train": 256,
}


def train_losses(run_dir):
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["train_loss"] for r in records if "train_loss" in r]


@pytest.mark.parametrize("model", list(VARIANTS))
def test_bf16_steps_track_fp32_and_resume_exactly(model, tmp_path, monkeypatch):
    """CPU autocast runs the GPU's default precision: a few steps of every variant stay finite
    and near fp32, and a bf16 run resumed from its step-2 checkpoint ends where the
    uninterrupted run did."""
    from mixit.training.checkpoint import CHECKPOINT, save_checkpoint

    fp32_dir, bf16_dir, kept = tmp_path / "fp32", tmp_path / "bf16", tmp_path / "step2"

    def save_and_keep_step_2(out, *state):
        save_checkpoint(out, *state)
        if state[-1]["step"] == 2:
            shutil.copytree(out / CHECKPOINT, kept)

    # ``mixit.train`` is also the package's ``train`` function: the module is reached by name.
    monkeypatch.setattr(
        sys.modules["mixit.training.setup"], "save_checkpoint", save_and_keep_step_2
    )
    train("addition", model, out=fp32_dir, overrides=BF16_CHECK)
    shutil.rmtree(kept)
    bf16_settings = {**BF16_CHECK, "train.precision": "bf16"}
    finished = train("addition", model, out=bf16_dir, overrides=bf16_settings)
    fp32_losses, bf16_losses = train_losses(fp32_dir), train_losses(bf16_dir)
    assert all(math.isfinite(loss) for loss in bf16_losses) and len(bf16_losses) == 2
    assert bf16_losses == pytest.approx(fp32_losses, rel=0.02)
    assert bf16_losses != fp32_losses  # autocast did run in bf16
    # Back to the step-2 checkpoint, as if the run had been stopped there.
    for name in ("summary.json", "model.safetensors"):
        (bf16_dir / name).unlink()
    shutil.rmtree(bf16_dir / CHECKPOINT)
    kept.rename(bf16_dir / CHECKPOINT)
    resumed = train("addition", model, out=bf16_dir, overrides=bf16_settings, resume=True)
    assert resumed["metrics"] == finished["metrics"]
    assert train_losses(bf16_dir) == bf16_losses


def test_a_resolved_config_is_never_changed_in_place():
    """Fitting to the data and applying settings return new configs: the resolved one keeps
    the sizes left at 0 that name its run."""
    config = resolve_config("retrieval", "standard", "tiny", 0, MICRO)
    before = config.to_dict()
    data = get_task("retrieval").make_data(config.task, 0)
    fitted = fit_model_to_data(config, data)
    halted = with_settings(fitted, {"train.halt_at": 2, "train.steps": 4})
    assert config.to_dict() == before and config.model.vocab_size == 0
    assert fitted.model.vocab_size == data.vocab_size and fitted.train.halt_at == 0
    assert (halted.train.halt_at, halted.train.steps) == (2, 4)


def test_a_run_records_its_time_outside_its_steps_over_every_stretch(tmp_path):
    """summary.json's phase_seconds: setup and evaluation, neither counted in train_seconds,
    summed over a run halted and resumed (issue #102's breakdown)."""
    overrides = MICRO | {"train.steps": 8, "train.eval_every": 4}
    config = resolve_config("retrieval", "mixit", "tiny", 0, overrides)
    halted = with_settings(config, {"train.halt_at": 4})
    out = tmp_path / "run"
    run(halted, out, progress=False)
    kept = torch.load(out / "checkpoint" / "state.pt", weights_only=False)
    first = json.loads(kept["progress"])["phase_seconds"]
    summary = run(config, out, progress=False, resume=True)
    phases = summary["phase_seconds"]
    assert set(phases) == {"setup", "evaluation"}
    assert phases["setup"] > first["setup"] > 0 and phases["evaluation"] > first["evaluation"] > 0
    assert json.loads((out / "summary.json").read_text())["phase_seconds"] == phases


def test_train_accuracy_is_scored_at_the_last_evaluation_only(tmp_path):
    """No rule reads the train accuracy: the evaluations before the last skip its pass over
    the training rows, and the last one, at the budget or where the stop rule ends the run,
    scores it into the summary."""
    summary = micro_train("standard", 12, tmp_path, **{"train.eval_every": 4})
    lines = (tmp_path / "standard-12-0" / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["step"] for r in records] == [4, 8, 12]
    assert ["train_accuracy" in r for r in records] == [False, False, True]
    assert summary["metrics"]["train_accuracy"] == records[-1]["train_accuracy"]
    stopped = micro_train("standard", 40, tmp_path, **{"train.eval_every": 4, "train.stop_at": 0})
    assert stopped["stopped"] == "target" and stopped["steps_run"] == 4
    assert "train_accuracy" in stopped["metrics"]
