"""The cost model of ``--estimate --target``: its counts against the model mixit builds."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from mixit.cli import main
from mixit.cost.counts import counted
from mixit.cost.memory import mixer_of, sized_counts, training_bytes
from mixit.cost.predict import (
    GIB,
    TARGETS,
    forward_flops_per_token,
    memory_parts,
    predict,
    shapes,
)
from mixit.models.variants import VARIANTS
from mixit.training.resolve import resolve_config
from mixit.training.rundir import new_model

CPU = TARGETS["cpu"]


def filled(model, **overrides):
    config = resolve_config("retrieval", model, "tiny", 0, overrides)
    ((config, shape),) = shapes({0: config}).values()
    return config, shape


@pytest.mark.parametrize("model", list(VARIANTS))
def test_weights_gradients_and_moments_count_the_built_model(model):
    config, shape = filled(model)
    built = new_model(config)
    parts = memory_parts(config, shape.seq_len, shape.scored_share, CPU)
    weights = sum(p.numel() for p in built.parameters())
    trainable = sum(p.numel() for p in built.trainable_parameters())
    assert parts["weights"] == pytest.approx(4 * weights, rel=0.02)
    assert parts["gradients"] == pytest.approx(4 * trainable, rel=0.02)
    assert parts["optimizer"] == pytest.approx(8 * trainable, rel=0.02)


@pytest.mark.parametrize(
    "task, model, arch",
    [
        ("retrieval", "standard", "mixit"),
        ("retrieval", "mixit", "mixit"),
        ("retrieval", "standard", "hf:gpt2"),  # two 4n MLP matrices, not three gated ones
        ("retrieval", "mixit", "hf:llama"),
        ("compression", "standard", "mixit"),  # the bottleneck readout's MLP, no output head
    ],
)
def test_any_architecture_and_readout_is_counted_as_built(task, model, arch):
    if arch != "mixit":
        pytest.importorskip("transformers")
    config = resolve_config(task, model, "tiny", 0, {"model.arch": arch})
    ((config, shape),) = shapes({0: config}).values()
    built = new_model(config)
    parts = memory_parts(config, shape.seq_len, shape.scored_share, CPU)
    assert parts["weights"] == 4 * sum(p.numel() for p in built.parameters())
    assert parts["gradients"] == 4 * sum(p.numel() for p in built.trainable_parameters())
    # The forward pass's FLOPs as torch's own counter sees them run, every position through
    # the output head (a scored share of 1); attention on its math kernel, whose matmuls the
    # counter sees (it computes the masked scores too, as the cost model counts them).
    T = shape.seq_len
    ids = torch.randint(1, config.model.vocab_size, (2, T))
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        built(ids)
    # Llama's rotary table is built per forward pass and is no weight's work, so the cost model
    # leaves it out; transformers 5.17 builds it with a matmul the counter sees (batch x head
    # size x T FLOPs, seen on the GPU machine), 5.24 with a broadcast product it does not.
    per_module = counter.get_flop_counts()
    tables = [name for name in per_module if name.endswith("rotary_emb")]
    table = sum(sum(per_module[name].values()) for name in tables)
    per_token = forward_flops_per_token(config, T, 1.0)
    assert counter.get_total_flops() - table == pytest.approx(2 * T * per_token, rel=1e-6)


def test_mixits_fixed_matrices_are_counted_as_built():
    config, shape = filled("mixit")
    buffers = sum(b.numel() * b.element_size() for b in new_model(config).buffers())
    assert memory_parts(config, shape.seq_len, 1.0, CPU)["buffers"] == pytest.approx(
        buffers, rel=0.02
    )
    m = config.model
    assert memory_parts(config, shape.seq_len, 1.0, CPU)["buffers"] == 4 * m.n_layer * m.n_head * (
        m.block_size**2
    )


def test_activations_grow_with_the_batch_and_halve_under_bf16():
    config, shape = filled("standard")
    doubled, _ = filled("standard", **{"train.batch_size": 2 * config.train.batch_size})
    bf16, _ = filled("standard", **{"train.precision": "bf16"})
    one, two = (memory_parts(c, shape.seq_len, 1.0, CPU)["activations"] for c in (config, doubled))
    assert two == pytest.approx(2 * one, rel=1e-6)
    assert memory_parts(bf16, shape.seq_len, 1.0, CPU)["activations"] == pytest.approx(
        one / 2, rel=1e-6
    )


def test_micro_batches_hold_their_share_of_the_activations_and_make_a_big_step_fit(capsys):
    config, shape = filled("standard", **{"train.batch_size": 64})
    quarter, _ = filled("standard", **{"train.batch_size": 64, "train.micro_batches": 4})
    one, four = (memory_parts(c, shape.seq_len, 1.0, CPU) for c in (config, quarter))
    assert four["activations"] == pytest.approx(one["activations"] / 4, rel=1e-6)
    assert four["weights"] == one["weights"] and four["optimizer"] == one["optimizer"]
    lm = resolve_config("lm", "standard", "paper", 0, {})
    ((lm, lm_shape),) = shapes({0: lm}).values()
    needed = predict(lm, lm_shape, TARGETS["h100"])["micro_batches_to_fit"]
    assert needed > 1 and not predict(lm, lm_shape, TARGETS["h100"])["fits"]
    lm = lm.with_train(micro_batches=needed)
    assert predict(lm, lm_shape, TARGETS["h100"])["fits"]
    lm = lm.with_train(micro_batches=needed // 2)
    assert not predict(lm, lm_shape, TARGETS["h100"])["fits"]
    argv = ["compare", "--task", "lm", "--preset", "paper", "--models", "standard"]
    assert main([*argv, "--estimate", "--target", "h100"]) == 0
    assert f"train.micro_batches={needed} fits" in capsys.readouterr().out


def test_a_run_that_cannot_fit_is_said_and_time_follows_the_peak():
    config, shape = filled("standard")
    small = predict(config, shape, TARGETS["h100"])
    assert small["fits"] and small["memory_bytes"] < GIB
    big, big_shape = filled("standard", **{"model.n_embd": 16384, "model.n_layer": 48})
    assert not predict(big, big_shape, TARGETS["h100"])["fits"]
    a100 = predict(config, shape, TARGETS["a100"])
    ratio = TARGETS["h100"].peak_tflops["fp32"] / TARGETS["a100"].peak_tflops["fp32"]
    a, b = TARGETS["a100"].launch_ms  # the H100's, assumed
    launches = config.train.steps * (a + b * config.model.n_layer) / 1e3
    flop_seconds = small["run_seconds"] - launches
    assert a100["run_seconds"] - launches == pytest.approx(flop_seconds * ratio)


def test_compare_estimate_for_a_target_prints_memory_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "c"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--out", str(out)]
    assert main([*argv, "--estimate", "--target", "h100"]) == 0
    printed = capsys.readouterr().out
    assert "predicted for h100" in printed and "GiB" in printed
    assert not (out / "runs").exists()


def test_a_target_estimate_over_several_jobs_gives_each_its_own_device(capsys):
    argv = ["reproduce", "table5", "--seeds", "1", "--estimate", "--target", "h100"]
    assert main([*argv, "--jobs", "4"]) == 0
    assert "each job on its own h100" in capsys.readouterr().out
    for jobs, target in (("1", "h100"), ("4", "cpu")):
        assert main([*argv[:-1], target, "--jobs", jobs]) == 0
        assert "its own" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--estimate", "--target", "tpu"], "--target 'tpu' is not one of: h100, a100, cpu"),
        (["--target", "h100"], "--target goes with --estimate"),
    ],
)
def test_bad_targets_exit_2(extra, message, tmp_path, capsys):
    argv = ["compare", "--task", "retrieval", "--out", str(tmp_path / "c"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "task, overrides",
    [
        ("lm", {"task.max_documents": 40}),  # the shape is the preset's; the whole corpus is slow
        ("sentiment", {}),
        ("sentiment", {"model.construction": "authors"}),
    ],
)
def test_a_declared_shape_is_the_shape_of_the_built_data(task, overrides):
    from mixit.tasks import IGNORE_INDEX, get_task

    config = resolve_config(task, "mixit", "tiny", 0, overrides)
    spec = get_task(task)
    data = spec.make_data(config.task, 0)
    seq_len, vocab_size, scored = spec.declared_shape(config.task)
    assert (seq_len, vocab_size) == (data.train.inputs.shape[1], data.vocab_size)
    built = float((data.train.targets != IGNORE_INDEX).float().mean())
    assert scored == pytest.approx(built, abs=1e-3)


def test_cost_check_measures_a_step_on_random_tokens_in_the_runs_shape():
    # The check trains on random tokens shaped like the run's data: the same rows' length,
    # the same share of scored positions (the last ones), answers among the task's labels.
    from mixit.paper.cost_check import _measure_in_child, synthetic_data
    from mixit.tasks import get_task

    overrides = {"task.readout": "labels", "task.tokenizer": "words", "task.vocab_size": 64}
    config = resolve_config("sentiment", "mixit", "tiny", 0, overrides)
    ((config, shape),) = shapes({0: config}).values()
    data = synthetic_data(config, shape)
    assert data.train.inputs.shape == (2 * config.train.batch_size, shape.seq_len)
    scored = data.train.targets != -100  # (N, T)
    assert (scored.sum(1) == round(shape.scored_share * shape.seq_len)).all()
    assert scored[:, -1].all()
    labels = get_task("sentiment").answer_ids(config.task, config.model.vocab_size)
    assert set(data.train.targets[scored].tolist()) <= set(labels)
    config = config.with_train(device="cpu")
    measured = _measure_in_child(config, shape)
    predicted = sum(memory_parts(config, shape.seq_len, shape.scored_share, CPU).values())
    assert measured["step_seconds"] > 0
    assert 0.3 < measured["memory_bytes"] / predicted < 3


def test_a_step_costs_its_flops_and_a_launch_cost_per_micro_batch_and_layer():
    # Small steps are launch-bound: each micro-batch adds a + b x layers milliseconds.
    h100 = TARGETS["h100"]
    a, b = h100.launch_ms
    config, shape = filled("standard", **{"train.batch_size": 64})
    split, _ = filled("standard", **{"train.batch_size": 64, "train.micro_batches": 2})
    flops = 1e12
    one, two = (h100.step_seconds(c, flops) for c in (config, split))
    assert two - one == pytest.approx((a + b * config.model.n_layer) / 1e3)
    deeper, _ = filled("standard", **{"model.n_layer": config.model.n_layer + 1})
    assert h100.step_seconds(deeper, flops) - one == pytest.approx(b / 1e3)
    rate = h100.peak_tflops["fp32"] * 1e12 * h100.efficiency["fp32"]
    assert one == pytest.approx(flops / rate + (a + b * config.model.n_layer) / 1e3)
    run = predict(config, shape, h100)
    assert run["run_seconds"] > config.train.steps * run["step_seconds"]  # and evaluations


@pytest.mark.parametrize("model", list(VARIANTS))
def test_the_memory_check_is_the_cost_models_floor(model):
    """One memory model: the check that refuses a config before anything is built is the same
    parts at their floor (sizes alone, each layer's input, one scored position a row), and it
    stays below what the model as built is priced at on every target."""
    config, shape = filled(model)
    mixer = mixer_of(config)
    floor = training_bytes(config, shape.seq_len, mixer)
    assert sized_counts(config, mixer).parameters <= counted(config).parameters
    for target in TARGETS.values():
        assert floor <= sum(
            memory_parts(config, shape.seq_len, shape.scored_share, target).values()
        )


def test_compare_estimate_adds_the_halving_only_when_it_tunes(tmp_path, capsys):
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit"]
    argv += ["--out", str(tmp_path / "c"), "--estimate", "--target", "cpu"]
    assert main([*argv, "--tune", "lr"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("plus tuning (docs/tuning.md)")
    assert main(argv) == 0
    assert "plus tuning" not in capsys.readouterr().out


def test_an_estimate_counts_no_more_jobs_at_once_than_the_machine_has_cores(monkeypatch):
    from mixit.running import workers
    from mixit.study.pricing import list_schedule

    monkeypatch.setattr(workers.os, "cpu_count", lambda: 2)
    assert workers.parallel_jobs(1_000_000) == 2 and workers.parallel_jobs(1) == 1
    assert list_schedule([10.0] * 4, workers.parallel_jobs(1_000_000)) == 20.0  # not 10
