"""`mixit bench` runs on a tiny shape and writes the documented JSON (not a timed test)."""

import dataclasses
import json
import time

import pytest

from mixit.analysis.speed import bench_configs, synthetic_data_seconds
from mixit.cli import main
from mixit.cost.predict import flops_per_token
from mixit.tasks import TASKS


def test_bench_writes_rows_for_each_variant_and_hf(tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["bench", "--seq-len", "8", "--batch", "2", "--rounds", "2", "--vs-hf", "--decode"]
    assert main([*argv, "--json", str(out), "model.n_embd=32", "model.n_layer=1"]) == 0
    result = json.loads(out.read_text())
    configs = bench_configs(
        ["standard", "frozen-qk", "mixit"], {"model.n_embd": 32, "model.n_layer": 1}
    )
    for row in result["rows"]:  # each row's MFU: its own throughput and its variant's FLOPs
        flops = flops_per_token(configs[row["variant"]], 8)
        assert row["tokens_per_s"] == pytest.approx(8 * row["samples_per_s"])
        assert row["mfu"] == pytest.approx(
            row["tokens_per_s"] * flops / (result["peak_gflops"][row["precision"]] * 1e9)
        )
    keys = {"impl", "variant", "n_embd", "n_layer", "n_head", "seq_len", "batch"}
    keys |= {"tokens_per_s", "mfu", "peak_mem_mb"}
    assert all(keys <= set(row) for row in result["rows"])
    impls = [(row["impl"], row["variant"]) for row in result["rows"]]
    assert impls == [
        ("mixit", "standard"),
        ("mixit", "frozen-qk"),
        ("mixit", "mixit"),
        ("hf", "standard"),
    ]
    cache = {row["variant"]: row["cache_bytes_per_token"] for row in result["decode"]}
    assert cache["mixit"] * 2 == cache["standard"]
    assert "MFU" in capsys.readouterr().out
    assert main(["bench", "--batch", "0"]) == 2


def test_bench_steps_run_at_the_configs_precision():
    # `train.precision=bf16` reaches the timed step (it once timed fp32 whatever was asked).
    import torch

    from mixit.analysis.throughput import language_model_step, mixit_model

    def logits_dtype(precision):
        config = bench_configs(["standard"], {"model.n_embd": 16, "train.precision": precision})
        model = mixit_model(config["standard"], 8, torch.device("cpu"))
        seen = []

        def logits_of(ids):
            logits = model(ids)
            seen.append(logits.dtype)
            return logits

        optimizer = torch.optim.AdamW(model.parameters())
        tokens = torch.randint(0, 100, (2, 9))
        language_model_step(logits_of, optimizer, tokens, config["standard"])()
        return seen

    assert logits_dtype("fp32") == [torch.float32]
    assert logits_dtype("bf16") == [torch.bfloat16]


def test_flops_per_token_counts_only_the_gradients_a_variant_computes():
    n, L, T, V = 64, 3, 16, 100
    overrides = {"model.n_embd": n, "model.n_layer": L, "model.vocab_size": V}
    configs = bench_configs(["standard", "frozen-qk", "frozen-mlp", "mixit", "random"], overrides)
    flops = {name: flops_per_token(config, T) for name, config in configs.items()}
    params = L * (4 * n * n + 3 * 4 * n * n) + n * V  # matrices of the standard model
    assert flops["standard"] == 6 * params + 12 * L * T * n
    assert flops["standard"] - flops["frozen-qk"] == 2 * 2 * n * n * L
    assert flops["standard"] - flops["frozen-mlp"] == 2 * 3 * 4 * n * n * L
    assert flops["standard"] - flops["random"] == 2 * (16 * n * n * L)
    # MixiT has no W_Q, W_K and mixes with a fixed matrix: 4 L T n instead of 12 L T n.
    assert flops["standard"] - flops["mixit"] == 6 * 2 * n * n * L + 8 * L * T * n


def test_bench_data_times_100k_examples_of_every_synthetic_task(monkeypatch):
    dyck = TASKS["dyck"]

    def slow(config, seed):  # a generator known to take at least 0.05 s
        time.sleep(0.05)
        return dyck.make_data(config, seed)

    monkeypatch.setitem(TASKS, "dyck", dataclasses.replace(dyck, make_data=slow))
    seconds = synthetic_data_seconds(examples=2000)
    assert set(seconds) == {
        "addition",
        "dyck",
        "khop",
        "retrieval",
        "modular-addition",
        "memorization",
    }
    assert seconds["dyck"] >= 0.05 and all(s > 0 for s in seconds.values())


def test_a_slow_matmul_peak_is_timed_at_a_smaller_size_within_its_budget(monkeypatch):
    """A CPU without native bf16 took seconds a product at 1024; the peak then halves the
    size until one product is quick, and stops timing once about a second is spent."""
    import torch

    from mixit.analysis import speed

    sizes = []

    def fake(device, a, b):  # one ns per multiply-add: a 1024 product takes 1.07 s
        sizes.append(a.shape[0])
        return a.shape[0] ** 3 * 1e-9

    monkeypatch.setattr(speed, "_timed_product", fake)
    gflops = speed.matmul_peak_gflops(torch.device("cpu"), torch.float32, 1024)
    assert gflops == pytest.approx(2.0)
    assert sizes[:2] == [1024, 512] and set(sizes[1:]) == {512}
    timed = len(sizes) - 3  # two first products and a warm-up
    assert timed == 8  # 8 x 0.134 s passes the 1 s budget; 3 is the fewest
